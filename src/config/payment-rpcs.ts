/** `trust.payment_rpc`: where payment evidence of each network is checked. */

/** `<network>=<url>` entries of `trust.payment_rpc`, by network; a malformed entry is an error naming it. */
export function parsePaymentRpcs(entries: readonly string[]): Map<string, string> {
  const rpcs = new Map<string, string>()
  for (const entry of entries) {
    const at = entry.indexOf('=')
    const network = entry.slice(0, at)
    const url = entry.slice(at + 1)
    if (at <= 0 || !/^[-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,32}$/.test(network) || !URL.canParse(url))
      throw new Error(
        `trust.payment_rpc: "${entry}" is not <network>=<url> (e.g. eip155:8453=https://mainnet.base.org)`
      )
    rpcs.set(network, url)
  }
  return rpcs
}
