/**
 * docs/examples/nginx.conf in front of a real node: TLS ends at nginx, HTTP and a WebSocket route
 * pass through, and with `http.trusted_proxies` naming nginx the node sees the client's own address
 * (not nginx's, nor one the client made up). The example runs as written, with only its ports,
 * upstream and certificate paths replaced. Where nginx is not installed (`nginx` on PATH or in
 * /usr/sbin), the test is registered as skipped, its title saying so, and the run still passes.
 */
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { request } from 'node:http'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import test from 'ava'
import { pino } from 'pino'
import { startRegistryNode } from '../../src/node.js'
import { testConfig } from '../helpers/node.js'
import { outputOf } from '../helpers/shared.js'
import { httpsGet, makeCertificate, writeCertificate, wssFirstMessage } from '../helpers/tls.js'

const EXAMPLE = new URL('../../docs/examples/nginx.conf', import.meta.url)
const nginx = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/usr/local/sbin']
  .map(dir => join(dir, 'nginx'))
  .find(path => existsSync(path))

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number }
      probe.close(() => resolve(port))
    })
  })
}

/** The example with one line replaced; the example must hold it exactly once, or the test would test something else. */
function replaceOnce(text: string, from: string, to: string): string {
  const at = text.indexOf(from)
  if (at === -1 || text.indexOf(from, at + 1) !== -1)
    throw new Error(`docs/examples/nginx.conf: expected "${from}" once`)
  return text.slice(0, at) + to + text.slice(at + from.length)
}

const title =
  'docs/examples/nginx.conf in front of a node: HTTPS and WSS through nginx, the client address through http.trusted_proxies'

if (!nginx) test.skip(`${title} (skipped: nginx is not installed; apt-get install nginx runs it)`, () => {})
else
  test(title, async t => {
    const dir = await mkdtemp(join(tmpdir(), 'registry-nginx-'))
    t.teardown(() => rm(dir, { recursive: true, force: true }))
    // nginx started by root runs its workers as nobody, which must reach the temp paths.
    await chmod(dir, 0o755)
    const lines: Array<Record<string, unknown>> = []
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) })
    const node = await startRegistryNode(testConfig(join(dir, 'data'), { http: { trusted_proxies: ['127.0.0.1'] } }), {
      logger
    })
    t.teardown(() => node.stop())

    const cert = await makeCertificate('proxy')
    const files = await writeCertificate(dir, 'proxy', cert)
    const [tlsPort, plainPort] = [await freePort(), await freePort()]
    let site = await readFile(EXAMPLE, 'utf8')
    site = replaceOnce(site, 'server 127.0.0.1:8080;', `server 127.0.0.1:${node.httpPort};`)
    site = replaceOnce(site, 'listen 443 ssl;', `listen 127.0.0.1:${tlsPort} ssl;`)
    site = replaceOnce(site, 'listen 80;', `listen 127.0.0.1:${plainPort};`)
    site = replaceOnce(site, '/etc/letsencrypt/live/registry.example.org/fullchain.pem', files.certFile)
    site = replaceOnce(site, '/etc/letsencrypt/live/registry.example.org/privkey.pem', files.keyFile)
    await writeFile(join(dir, 'registry-node.conf'), site)
    const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']
      .map(kind => `  ${kind}_temp_path ${join(dir, kind)};`)
      .join('\n')
    await writeFile(
      join(dir, 'nginx.conf'),
      `pid ${join(dir, 'nginx.pid')};\nworker_processes 1;\nevents { worker_connections 64; }\nhttp {\n  access_log off;\n${temp}\n  include ${join(dir, 'registry-node.conf')};\n}\n`
    )
    const proxy = spawn(
      nginx,
      ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log'), '-g', 'daemon off;'],
      {
        stdio: ['ignore', 'pipe', 'pipe']
      }
    )
    const output = outputOf(proxy)
    const exited = new Promise(resolve => proxy.once('exit', resolve))
    t.teardown(async () => {
      proxy.kill('SIGTERM')
      await exited
    })
    const url = `https://127.0.0.1:${tlsPort}`
    // Up once it answers.
    for (let i = 0; ; i++) {
      try {
        await httpsGet(`${url}/health`, cert.certPem)
        break
      } catch (err) {
        if (i === 100 || proxy.exitCode !== null)
          throw new Error(
            `nginx did not start: ${(err as Error).message}\n${output()}${await readFile(join(dir, 'error.log'), 'utf8').catch(() => '')}`
          )
        await new Promise(resolve => setTimeout(resolve, 100))
      }
    }

    // From another loopback address, claiming yet another in X-Forwarded-For.
    const info = await httpsGet(`${url}/v1/info`, cert.certPem, {
      localAddress: '127.0.0.2',
      headers: { 'X-Forwarded-For': '203.0.113.9' }
    })
    t.is(info.status, 200)
    t.is((info.body as { registry_id: string }).registry_id, node.identity.registryId)
    const logged = lines.find(line => line.msg === 'request' && line.path === '/v1/info')
    t.is(logged?.ip, '127.0.0.2', 'the node sees the client, not nginx and not the forged address')

    const { ws, first } = await wssFirstMessage(`wss://127.0.0.1:${tlsPort}/v1/ws/activity`, cert.certPem, {
      localAddress: '127.0.0.2'
    })
    t.is(first.type, 'hello')
    ws.close()

    // Plain HTTP is sent to HTTPS.
    const redirect = await new Promise<{ status: number; location: string }>((resolve, reject) =>
      request(`http://127.0.0.1:${plainPort}/v1/info`, { headers: { Host: 'registry.example.org' } }, res => {
        res.resume()
        resolve({ status: res.statusCode ?? 0, location: String(res.headers.location) })
      })
        .once('error', reject)
        .end()
    )
    t.deepEqual(redirect, { status: 301, location: 'https://registry.example.org/v1/info' })
  })
