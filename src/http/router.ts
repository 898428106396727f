import { RegistryError } from '../errors.js'
import type { HttpMethod, RouteDefinition } from './http.js'

interface Node {
  literal: Map<string, Node>
  param?: { name: string; node: Node }
  routes: Map<string, RouteDefinition>
}

const newNode = (): Node => ({ literal: new Map(), routes: new Map() })

export type RouteMatch =
  | { route: RouteDefinition; params: Record<string, string> }
  | { route: null; allowed: HttpMethod[] }

/**
 * A segment trie over path templates such as /v1/entities/{entity_id}. Literal segments win over
 * parameters; parameters are percent-decoded (clients encode `zns:` IDs as `zns%3A`).
 */
export class Router {
  private readonly root = newNode()

  add(route: RouteDefinition): void {
    let node = this.root
    for (const segment of route.path.split('/').slice(1)) {
      const param = /^\{(\w+)\}$/.exec(segment)
      if (param) {
        node.param ??= { name: param[1] as string, node: newNode() }
        if (node.param.name !== param[1]) throw new Error(`conflicting parameter names at ${route.path}`)
        node = node.param.node
      } else {
        let next = node.literal.get(segment)
        if (!next) node.literal.set(segment, (next = newNode()))
        node = next
      }
    }
    if (node.routes.has(route.method)) throw new Error(`duplicate route ${route.method} ${route.path}`)
    node.routes.set(route.method, route)
  }

  /** Returns the route, or the methods the path allows (empty: no such path). */
  match(method: string, path: string): RouteMatch {
    const segments = path.split('/').slice(1)
    const params: Record<string, string> = {}
    const node = this.walk(this.root, segments, 0, params)
    if (!node) return { route: null, allowed: [] }
    const route = node.routes.get(method) ?? (method === 'HEAD' ? node.routes.get('GET') : undefined)
    if (!route) return { route: null, allowed: [...node.routes.keys()] as HttpMethod[] }
    for (const key of Object.keys(params)) {
      try {
        params[key] = decodeURIComponent(params[key] as string)
      } catch {
        throw new RegistryError('invalid_id', `The path parameter ${key} is not valid percent-encoding.`, key)
      }
    }
    return { route, params }
  }

  private walk(node: Node, segments: string[], i: number, params: Record<string, string>): Node | null {
    if (i === segments.length) return node.routes.size > 0 ? node : null
    const segment = segments[i] as string
    const literal = node.literal.get(segment)
    if (literal) {
      const found = this.walk(literal, segments, i + 1, params)
      if (found) return found
    }
    // An empty segment still matches a parameter, so a missing ID gets the route's own 400, not a 404.
    if (node.param) {
      const found = this.walk(node.param.node, segments, i + 1, params)
      if (found) {
        params[node.param.name] = segment
        return found
      }
    }
    return null
  }
}
