// Node 20 lacks Promise.withResolvers, which libp2p calls at run time (docs/compatibility.md). Imported first.
interface WithResolvers {
  withResolvers?: <T>() => {
    promise: Promise<T>
    resolve: (v: T | PromiseLike<T>) => void
    reject: (e?: unknown) => void
  }
}
const P = Promise as unknown as WithResolvers
if (typeof P.withResolvers !== 'function') {
  P.withResolvers = <T>() => {
    let resolve!: (v: T | PromiseLike<T>) => void
    let reject!: (e?: unknown) => void
    const promise = new Promise<T>((res, rej) => {
      resolve = res
      reject = rej
    })
    return { promise, resolve, reject }
  }
}
export {}
