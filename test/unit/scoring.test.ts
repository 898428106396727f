import test from 'ava'
import { pino } from 'pino'
import { PeerPenalties, peerScoreParams, SCORE_THRESHOLDS, ScoreGuard, TOPIC_SCORE } from '../../src/mesh/scoring.js'
import { validatePeerScoreParams, validatePeerScoreThresholds } from '@libp2p/gossipsub/score'

test('the parameters pass gossipsub checks, and three invalid messages reach the graylist where two do not', t => {
  t.notThrows(() => validatePeerScoreParams(peerScoreParams(['/t/1'], () => 0)))
  t.notThrows(() => validatePeerScoreThresholds(SCORE_THRESHOLDS))
  const invalid = (n: number) => n * n * TOPIC_SCORE.invalidMessageDeliveriesWeight * TOPIC_SCORE.topicWeight
  // The positive part is capped at 10 (topicScoreCap).
  t.true(10 + invalid(2) > SCORE_THRESHOLDS.graylistThreshold)
  t.true(10 + invalid(1) > SCORE_THRESHOLDS.gossipThreshold)
  t.true(invalid(3) < SCORE_THRESHOLDS.graylistThreshold)
  // Six peers on one address are graylisted, five are not; whitelisted addresses are spared.
  const params = peerScoreParams(['/t/1'], () => 0, ['203.0.113.7'])
  const colocation = (peers: number) =>
    (peers - params.IPColocationFactorThreshold) ** 2 * params.IPColocationFactorWeight
  t.true(colocation(5) > SCORE_THRESHOLDS.graylistThreshold)
  t.true(colocation(6) < SCORE_THRESHOLDS.graylistThreshold)
  t.deepEqual([...params.IPColocationFactorWhitelist], ['203.0.113.7'])
})

test('replays cost −2 × count², the count decaying by 0.5 % a second', t => {
  let now = 0
  const penalties = new PeerPenalties(() => now)
  t.is(penalties.score('p'), 0)
  for (let i = 0; i < 3; i++) penalties.replayed('p')
  t.is(penalties.score('p'), -18)
  t.true(penalties.score('p') > SCORE_THRESHOLDS.gossipThreshold)
  for (let i = 0; i < 4; i++) penalties.replayed('p')
  t.true(penalties.score('p') < SCORE_THRESHOLDS.graylistThreshold)
  now += 138_000
  t.true(Math.abs(penalties.score('p') - -2 * 3.5 * 3.5) < 0.5, 'half the count after about 138 s')
  now += 3_600_000
  t.is(penalties.score('p'), 0)
  t.is(penalties.score('other'), 0)
})

test('the guard hangs up on a peer below the graylist and refuses it until its score and the least time allow', t => {
  let now = 0
  const score = new Map([
    ['good', 1],
    ['bad', -100]
  ])
  const hungUp: string[] = []
  const guard = new ScoreGuard({
    score: p => score.get(p) ?? 0,
    peers: () => [...score.keys()],
    hangUp: async p => {
      hungUp.push(p)
    },
    logger: pino({ level: 'silent' }),
    refuseMs: 60_000,
    now: () => now
  })
  guard.check()
  t.deepEqual(hungUp, ['bad'])
  t.is(guard.disconnected, 1)
  t.true(guard.refuses('bad'))
  t.false(guard.refuses('good'))
  score.set('bad', -10)
  t.true(guard.refuses('bad'), 'recovered, but the least time has not passed')
  now += 60_000
  t.false(guard.refuses('bad'))
  t.deepEqual(guard.graylisted(), [])
})
