"""PFC deadlock on a ring: formed, persisting, broken by the watchdog, prevented by the routes'
dependency check (`fabric-lab run pfc-deadlock`)."""
