/**
 * SIGHUP on `registry-node start`, on each server kind this runtime has: the config file is read
 * again and what can change at run time changes without a restart (the certificate, replaced in
 * place as a renewal does; the log level; a rate limit), a setting that cannot is named in one
 * warning, and a config file with an error is one error line while the node keeps serving.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'ava'
import { loadUws } from '../../src/http/uws-loader.js'
import { spawnNode, type NodeProcess } from '../../scripts/lib/node-process.js'
import { httpsGet, makeCertificate, servedFingerprint, writeCertificate } from '../helpers/tls.js'

const kinds = loadUws().module !== null ? (['uws', 'node'] as const) : (['node'] as const)

/** The node's JSON log lines so far. */
function logLines(node: NodeProcess): Array<Record<string, unknown>> {
  return node
    .output()
    .split('\n')
    .filter(line => line.startsWith('{'))
    .map(line => JSON.parse(line) as Record<string, unknown>)
}

/** Waits until a log line matches. */
async function logged(node: NodeProcess, match: (line: Record<string, unknown>) => boolean): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (logLines(node).some(match)) return
    await new Promise(resolve => setTimeout(resolve, 50))
  }
  throw new Error(`no such log line in:\n${node.output()}`)
}

const configFile = (certFile: string, keyFile: string, level: string, reads: number, extra = ''): string =>
  `name = "reload-test"\n${extra}\n[tls]\ncert_file = "${certFile}"\nkey_file = "${keyFile}"\n\n[log]\nlevel = "${level}"\n\n[rate_limit]\nreads_per_minute = ${reads}\n`

for (const kind of kinds) {
  test(`--http-server ${kind}: SIGHUP serves a renewed certificate and applies the log level and a rate limit; a broken config file is one error line`, async t => {
    const dir = await mkdtemp(join(tmpdir(), `registry-reload-${kind}-`))
    t.teardown(() => rm(dir, { recursive: true, force: true }))
    const [first, second] = await Promise.all([makeCertificate('first'), makeCertificate('second')])
    const { certFile, keyFile } = await writeCertificate(dir, 'node', first)
    const config = join(dir, 'registry-node.toml')
    await writeFile(config, configFile(certFile, keyFile, 'warn', 1000))
    const node = await spawnNode(
      ['--config', config, '--data', join(dir, 'data'), '--http-port', '0', '--no-p2p', '--http-server', kind],
      { logLevel: null }
    )
    t.teardown(() => {
      node.child.kill('SIGKILL')
    })
    t.regex(node.url, /^https:/)
    const before = await httpsGet(`${node.url}/v1/info`, first.certPem)
    t.is(before.headers['x-ratelimit-limit'], '1000')
    t.is(await servedFingerprint(node.url, first.certPem), first.fingerprint)
    t.false(
      logLines(node).some(line => line.msg === 'request'),
      'requests are not logged at warn'
    )

    // A renewal replaces the files in place; the operator also raises the log level, lowers a limit
    // and renames the node (which takes a restart).
    await writeCertificate(dir, 'node', second)
    await writeFile(config, configFile(certFile, keyFile, 'info', 500).replace('reload-test', 'renamed'))
    node.child.kill('SIGHUP')
    await logged(node, line => line.msg === 'settings changed that take a restart: name')
    const lines = logLines(node)
    t.true(lines.some(l => l.msg === 'setting applied: log.level' && l.from === 'warn' && l.to === 'info'))
    t.true(lines.some(l => l.msg === 'setting applied: rate_limit.reads_per_minute' && l.to === 500))
    t.true(
      lines.some(l => l.msg === 'tls certificate reloaded: a new certificate' && l.fingerprint === second.fingerprint)
    )

    t.is(await servedFingerprint(node.url, second.certPem), second.fingerprint)
    const after = await httpsGet(`${node.url}/v1/info`, second.certPem)
    t.is(after.status, 200)
    t.is(after.headers['x-ratelimit-limit'], '500')
    await logged(node, line => line.msg === 'request' && line.path === '/v1/info')

    // A config file with an error: one error line, and the node goes on as it was.
    await writeFile(config, `${configFile(certFile, keyFile, 'debug', 7)}\n[http]\nprot = 9090\n`)
    node.child.kill('SIGHUP')
    await logged(node, line => line.level === 50)
    const errors = logLines(node).filter(line => (line.level as number) >= 50)
    t.is(errors.length, 1)
    t.regex(
      String(errors[0]?.msg),
      /^reload refused, still running on the previous configuration: .*unknown setting http\.prot; did you mean http\.port\?$/
    )
    const still = await httpsGet(`${node.url}/v1/info`, second.certPem)
    t.is(still.status, 200)
    t.is(still.headers['x-ratelimit-limit'], '500')
    t.is(await servedFingerprint(node.url, second.certPem), second.fingerprint)

    node.child.kill('SIGTERM')
    t.is(await node.exited, 0, node.output())
  })
}
