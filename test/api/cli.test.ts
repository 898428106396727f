import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import test from 'ava'
import { parse as parseToml } from 'smol-toml'
import { CLI_FROM_SOURCES } from '../../scripts/lib/node-process.js'
import { http, startTestNode } from '../helpers/node.js'

const exec = promisify(execFile)

async function cli(cwd: string, args: string[], input?: string): Promise<string> {
  const child = exec(process.execPath, [...CLI_FROM_SOURCES, ...args], { cwd })
  if (input !== undefined) {
    child.child.stdin!.end(input)
  }
  return (await child).stdout
}

test('the registry guide walk-through: keys, signed bodies, register, read, update, deregister', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'registry-cli-'))
  const node = await startTestNode()
  try {
    const dev = JSON.parse(await cli(dir, ['keys', 'new', '--out', 'keys/developer.json'])) as {
      developer_id: string
      public_key: string
    }
    t.regex(dev.developer_id, /^zns:dev:[0-9a-f]{32}$/)
    const derived = JSON.parse(
      await cli(dir, [
        'keys',
        'derive',
        '--developer',
        'keys/developer.json',
        '--index',
        '0',
        '--out',
        'keys/agent0.json'
      ])
    ) as {
      entity_id: string
      developer_proof: { index: number }
    }
    t.is(derived.developer_proof.index, 0)

    const devBody = await cli(
      dir,
      ['keys', 'sign', '--key', 'keys/developer.json', '--body', '-'],
      '{"name": "Alice the Builder", "github": "alice"}'
    )
    t.is((await http(node.url, 'POST', '/v1/developers', { raw: devBody })).status, 201)

    await writeFile(
      join(dir, 'agent.json'),
      JSON.stringify({
        name: 'Doc Translator',
        type: 'agent',
        category: 'translation',
        entity_url: 'https://translator.example.com'
      })
    )
    const agentBody = await cli(dir, [
      'keys',
      'sign',
      '--key',
      'keys/agent0.json',
      '--body',
      'agent.json',
      '--with-proof'
    ])
    const registered = await http(node.url, 'POST', '/v1/entities', { raw: agentBody })
    t.is(registered.status, 201, JSON.stringify(registered.body))
    t.is(registered.body.entity_id, derived.entity_id)
    t.like((await http(node.url, 'GET', `/v1/entities/${derived.entity_id}`)).body, {
      developer_id: dev.developer_id,
      name: 'Doc Translator'
    })

    const update = await cli(
      dir,
      ['keys', 'sign', '--key', 'keys/agent0.json', '--body', '-'],
      '{"summary": "Translates and summarises documents"}'
    )
    t.like((await http(node.url, 'PUT', `/v1/entities/${derived.entity_id}`, { raw: update })).body, {
      summary: 'Translates and summarises documents'
    })

    const signature = (
      await cli(dir, ['keys', 'sign', '--key', 'keys/agent0.json', '--message', derived.entity_id])
    ).trim()
    t.is(
      (
        await http(node.url, 'DELETE', `/v1/entities/${derived.entity_id}`, {
          headers: { authorization: `Bearer ${signature}` }
        })
      ).status,
      200
    )
    t.is((await http(node.url, 'GET', `/v1/entities/${derived.entity_id}`)).status, 404)

    const shown = JSON.parse(await cli(dir, ['keys', 'show', '--key', 'keys/agent0.json'])) as {
      entity_ids: { agent: string }
    }
    t.is(shown.entity_ids.agent, derived.entity_id)
    await t.throwsAsync(
      cli(dir, ['keys', 'new', '--out', 'keys/developer.json']),
      undefined,
      'never overwrites a key file'
    )
    await t.throwsAsync(
      cli(dir, ['keys', 'derive', '--developer', 'keys/developer.json']),
      undefined,
      'the index is never defaulted'
    )
  } finally {
    await node.stop()
    await rm(dir, { recursive: true, force: true })
  }
})

test('init creates the node identity and a commented TOML config that start reads', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'registry-init-'))
  try {
    const out = JSON.parse(await cli(dir, ['init', '--data', 'nodedata', '--config', 'node.toml'])) as {
      registry_id: string
      config_written: boolean
    }
    t.regex(out.registry_id, /^zns:registry:[0-9a-f]{32}$/)
    t.true(out.config_written)
    const text = await readFile(join(dir, 'node.toml'), 'utf8')
    t.true(text.includes('# Public host name'))
    t.is((parseToml(text) as { data_dir: string }).data_dir, 'nodedata')
    t.truthy(await stat(join(dir, 'nodedata', 'node-key.json')))
    const again = JSON.parse(await cli(dir, ['init', '--data', 'nodedata', '--config', 'node.toml'])) as {
      registry_id: string
      config_written: boolean
    }
    t.is(again.registry_id, out.registry_id, 'the identity is kept')
    t.false(again.config_written, 'an existing config file is not overwritten')
    const help = await cli(dir, ['start', '--help'])
    t.true(help.includes('--no-rate-limit'))
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
})

test('init --mode restricted writes a webhook secret; verify-registry checks a live node', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'registry-restricted-'))
  const node = await startTestNode()
  try {
    const out = JSON.parse(
      await cli(dir, [
        'init',
        '--mode',
        'restricted',
        '--auth-url',
        'https://auth.example',
        '--data',
        'd',
        '--config',
        'r.toml'
      ])
    ) as { webhook_secret: string }
    t.regex(out.webhook_secret, /^whsec_[0-9a-f]{64}$/)
    const config = parseToml(await readFile(join(dir, 'r.toml'), 'utf8')) as {
      onboarding: { mode: string; webhook_secret: string; auth_url: string }
    }
    t.like(config.onboarding, {
      mode: 'restricted',
      webhook_secret: out.webhook_secret,
      auth_url: 'https://auth.example'
    })
    const report = await cli(dir, ['verify-registry', node.url])
    t.regex(report, /registry-identity|Registry identity proof/i)
    t.true(report.trimEnd().endsWith('OK'), report)
    await t.throwsAsync(
      cli(dir, ['verify-registry', 'http://127.0.0.1:9']),
      undefined,
      'an unreachable node fails with a non-zero exit'
    )
  } finally {
    await node.stop()
    await rm(dir, { recursive: true, force: true })
  }
})
