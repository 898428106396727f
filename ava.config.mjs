// The longest serial file starts first: last, it ran alone for minutes while the other worker sat idle.
const FIRST = ['test/testnet/testnet.test.ts']
const rank = file => {
  const i = FIRST.findIndex(suffix => file.endsWith(suffix))
  return i === -1 ? FIRST.length : i
}

export default {
  files: ['test/**/*.test.ts'],
  extensions: { ts: 'module' },
  nodeArguments: ['--import=tsx'],
  workerThreads: false,
  timeout: '300s',
  concurrency: 2,
  sortTestFiles: (a, b) => rank(a) - rank(b) || a.localeCompare(b, [], { numeric: true })
}
