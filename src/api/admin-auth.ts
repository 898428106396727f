import { createHash, timingSafeEqual } from 'node:crypto'
import { RegistryError } from '../errors.js'

/**
 * `Authorization: Bearer <onboarding.webhook_secret>` for admin routes that work in either onboarding
 * mode (adding peers). Same comparison as OnboardingService.checkAdmin (digests, constant time), but
 * without its restricted-mode requirement: the approval webhook only makes sense in restricted mode.
 */
export function adminBearerCheck(secret: string): (authorization: string | undefined) => void {
  const digest = secret ? createHash('sha256').update(secret).digest() : null
  return authorization => {
    if (!digest)
      throw new RegistryError(
        'admin_unavailable',
        'Admin endpoints need onboarding.webhook_secret (registry-node init --mode restricted makes one; any mode may set it).'
      )
    const token = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1]
    if (!token || !timingSafeEqual(createHash('sha256').update(token).digest(), digest))
      throw new RegistryError('admin_unauthorized')
  }
}
