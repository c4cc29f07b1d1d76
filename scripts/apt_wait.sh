# shellcheck shell=bash
# Sourced by the install scripts: apt-get and debconf that wait while another package manager
# runs (a fresh VM often runs unattended upgrades or cloud-init at first boot) instead of failing.
#
# apt-get waits for the dpkg locks itself when asked (DPkg::Lock::Timeout, apt >= 1.9.11), but
# `apt-get update` (the lists lock) and debconf (its database lock) give up at once; those are
# retried for as long as the failure is a held lock, up to APT_LOCK_WAIT seconds in all.

APT_LOCK_WAIT=${APT_LOCK_WAIT:-1800}
APT_LOCK_POLL=${APT_LOCK_POLL:-5}

# Messages of apt, dpkg and debconf when another process holds a lock they need.
_apt_lock_pattern='Could not get lock|Unable to lock|Unable to acquire the dpkg|is locked by another process'

# with_lock_wait CMD...: run CMD; while it fails on a held lock, wait and run it again.
with_lock_wait() {
  local deadline=$((SECONDS + APT_LOCK_WAIT)) log rc said=0
  log=$(mktemp)
  while :; do
    rc=0
    "$@" 2>"$log" || rc=$?
    if [ "$rc" -eq 0 ] || ! grep -Eq "$_apt_lock_pattern" "$log" || [ "$SECONDS" -ge "$deadline" ]; then
      cat "$log" >&2
      if [ "$rc" -ne 0 ] && grep -Eq "$_apt_lock_pattern" "$log"; then
        echo "${APT_WAIT_WHO:-apt}: the package manager lock was still held after ${APT_LOCK_WAIT} s;" \
             "run this again when the other package manager has finished" >&2
      fi
      rm -f "$log"
      return "$rc"
    fi
    if [ "$said" -eq 0 ]; then
      echo "${APT_WAIT_WHO:-apt}: another package manager is running (unattended upgrades?);" \
           "waiting up to ${APT_LOCK_WAIT} s for it to finish" >&2
      said=1
    fi
    sleep "$APT_LOCK_POLL"
  done
}

# apt_get ARGS...: apt-get that waits for the dpkg locks and retries on the lists lock.
apt_get() {
  with_lock_wait apt-get -o "DPkg::Lock::Timeout=${APT_LOCK_WAIT}" "$@"
}
