/**
 * registry-node: a registry node inside another program. The command line (`registry-node start`)
 * is this plus signal handling; an entity and the calls to it are in `registry-node/entity`.
 *
 *   const node = await startRegistryNode(await loadConfig({ argv: ['--http-port', '9000'] }))
 *   // node.url, node.search, node.bus.subscribe(...); later: await node.stop()
 */
// Only what embedding needs: the services behind RegistryNode are reached through it, and their
// own modules stay free to change shape.
export { startRegistryNode, NODE_KEY_FILE, type RegistryNode, type NodeOptions } from './node.js'
export { loadConfig, defaultConfig, configTemplate, ConfigError, type LoadOptions } from './config/load.js'
export type { NodeConfig, LogLevel } from './config/settings.js'
export type { RegistryEvent } from './events/bus.js'
export { NODE_VERSION } from './version.js'
