/**
 * A process-wide observer slot: the kit reports what it decided (a claim, an ended wait) and the worker installs a
 * metrics recorder, so kit modules never import metrics code.
 */

/** One observer at a time; {@link ObserverSlot.report} never throws. */
export interface ObserverSlot<T> {
  /** Installs `observer` (replacing the previous one); `undefined` removes it. */
  set(observer: ((observation: T) => void) | undefined): void;
  /** Hands `observation` to the observer, if any; an observer that throws is ignored. */
  report(observation: T): void;
}

/** A new, empty {@link ObserverSlot}. */
export function observerSlot<T>(): ObserverSlot<T> {
  let observer: ((observation: T) => void) | undefined;
  return {
    set: (next) => {
      observer = next;
    },
    report: (observation) => {
      try {
        observer?.(observation);
      } catch {
        // Observability must never change what the activity does.
      }
    },
  };
}
