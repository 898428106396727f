/**
 * Strings read from LMDB are copies, not slices of a record's text. msgpackr (lmdb-js's encoder)
 * decodes a value's strings with its native helper (msgpackr-extract) as one string and hands out
 * slices of it, and V8 keeps a sliced string's parent alive as long as the slice lives: every ID,
 * tag or category a view keeps of a record read at start kept that record's whole text. At a
 * million entities that was 1.1 GB of the HTTP thread's heap after a restart (1,436 MB live against
 * 352 MB without the helper), the difference between 6.9 and 5.8 GiB of RSS. The JavaScript decoder
 * makes a string per field; it costs about 3 µs more per record read (docs/decisions.md).
 *
 * msgpackr reads this variable when it is first imported, so this module is imported before lmdb
 * wherever lmdb is (tests check that the helper is off).
 */
process.env.MSGPACKR_NATIVE_ACCELERATION_DISABLED = 'true'
