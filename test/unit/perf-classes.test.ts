import test from 'ava'
import { breakdown, classifyLeaf, NODE_MARKERS, parsePerfScript } from '../../scripts/lib/perf-classes.js'

// `perf script -F comm,pid,tid,ip,sym,dso` as perf 6 prints it: a main thread in libsodium, a libuv
// thread committing LMDB (its leaf in the kernel, under fdatasync), optimized JavaScript named by
// --perf-basic-prof, TurboFan on a V8 worker, and a thread whose name has a space.
const OUTPUT = [
  'node  7931/7931  ',
  '\t          1a2b3c fe25519_mul (/work/main/node_modules/sodium-native/prebuilds/linux-x64/sodium-native.node)',
  '\t          1a2b40 crypto_sign_verify_detached (/work/main/node_modules/sodium-native/prebuilds/linux-x64/sodium-native.node)',
  '',
  'node  7931/7938  ',
  '\tffffffff82203249 _raw_spin_unlock_irqrestore ([kernel.kallsyms])',
  '\tffffffff81712072 __x64_sys_fdatasync ([kernel.kallsyms])',
  '\t           fed0a fdatasync (/usr/lib/x86_64-linux-gnu/libc.so.6)',
  '\t           88c09 mdb_txn_commit (/work/main/node_modules/@lmdb/lmdb-linux-x64/node.abi115.glibc.node)',
  '',
  'node  7931/7931  ',
  '\t    7f83739a97de JS:*processSendQueue file:///work/main/node_modules/x/y.js:327:21 (/tmp/perf-7931.map)',
  '\t          14ce0dc Builtins_JSEntryTrampoline (/usr/bin/node)',
  '',
  'V8 DefaultWorke  7931/7935  ',
  '\t          d28e21 v8::internal::compiler::GraphReducer::ReduceTop() (/usr/bin/node)',
  '',
  'node  8000/8000  ',
  '\t          6c312 LZ4_compress_fast_continue (/work/main/node_modules/@lmdb/lmdb-linux-x64/node.abi115.glibc.node)',
  ''
].join('\n')

test('perf script output: each sample with its process, thread and frames, leaf first', t => {
  const samples = parsePerfScript(OUTPUT)
  t.deepEqual(
    samples.map(s => [s.comm, s.pid, s.tid, s.frames.length]),
    [
      ['node', 7931, 7931, 2],
      ['node', 7931, 7938, 4],
      ['node', 7931, 7931, 2],
      ['V8 DefaultWorke', 7931, 7935, 1],
      ['node', 8000, 8000, 1]
    ]
  )
  t.deepEqual(samples[3]!.frames[0], {
    symbol: 'v8::internal::compiler::GraphReducer::ReduceTop()',
    dso: '/usr/bin/node'
  })
})

test('samples are classed by their leaf frame', t => {
  const classes = parsePerfScript(OUTPUT).map(s => classifyLeaf(s.frames[0]))
  t.deepEqual(classes, ['ed25519', 'kernel', 'js-optimized', 'v8-compiler', 'lz4'])
  t.is(
    classifyLeaf({ symbol: 'JS:^onStreamRead node:internal/stream_base_commons:168:22', dso: '/tmp/perf-1.map' }),
    'js-unoptimized'
  )
  t.is(classifyLeaf({ symbol: 'v8::internal::Scavenger::ScavengeObject', dso: '/usr/bin/node' }), 'gc')
  t.is(classifyLeaf({ symbol: 'Builtins_LoadIC', dso: '/usr/bin/node' }), 'v8-builtins')
  t.is(classifyLeaf({ symbol: 'mdb_page_search_root', dso: '/x/node.abi115.glibc.node' }), 'lmdb')
  t.is(classifyLeaf(undefined), 'other-native')
})

test('a breakdown counts the chosen processes only, per class, thread and marker', t => {
  const result = breakdown(parsePerfScript(OUTPUT), new Set([7931]), NODE_MARKERS)
  t.is(result.samples, 4)
  t.is(result.byClass.get('ed25519'), 1)
  t.is(result.byClass.get('lz4'), undefined)
  t.is(result.markers.get('fdatasync'), 1)
  t.is(result.markers.get('pwrite'), 0)
  t.deepEqual(
    [...result.byThread].map(([tid, thread]) => [tid, thread.pid, thread.samples]),
    [
      [7931, 7931, 2],
      [7938, 7931, 1],
      [7935, 7931, 1]
    ]
  )
  t.is(breakdown(parsePerfScript(OUTPUT), new Set()).samples, 5)
})
