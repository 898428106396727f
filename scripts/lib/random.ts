export { seededRandom } from '../../src/testnet/random.js'
