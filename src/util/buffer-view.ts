/**
 * A Buffer over the same memory as `bytes`, for Buffer's encoders (base64, hex, UTF-8 text):
 * `Buffer.from(bytes)` copies first, which on every write's body (a seal, a gossip message) was
 * a kilobyte or two of garbage per operation.
 */
export function bufferView(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}
