/* Hash and checksum algorithms of p4switch/runtime/hashing.py (BMv2's calculations), bit-exact,
 * and the packing of their input fields.
 *
 * Each algorithm reads the bytes a BMv2 calculation sees: the input fields packed bit by bit,
 * MSB first, without byte alignment, zero-padded to a whole byte (cdp_pack_fields).
 * Check values over "123456789": crc16 0xBB3D, crc32 0xCBF43926, csum16 0xF62A, xor16 0x3908. */
#ifndef CDP_HASHING_H
#define CDP_HASHING_H

#include <stddef.h>
#include <stdint.h>

uint16_t cdp_crc16(const uint8_t *data, size_t len);    /* CRC-16/ARC */
uint32_t cdp_crc32(const uint8_t *data, size_t len);    /* CRC-32 as zlib's */
uint16_t cdp_csum16(const uint8_t *data, size_t len);   /* RFC 1071 Internet checksum */
uint16_t cdp_xor16(const uint8_t *data, size_t len);    /* XOR of big-endian 16-bit words */
uint64_t cdp_identity(const uint8_t *data, size_t len); /* the first <= 8 bytes, big-endian */

/* Concatenate `count` fields of widths[i] <= 64 bits (values[i] truncated to it) MSB first into
 * `out`, zero-padded to a whole byte; returns the bytes written, ceil(sum of widths / 8), which
 * `out` must have room for. */
size_t cdp_pack_fields(uint8_t *out, const uint64_t *values, const uint8_t *widths, size_t count);

#endif
