/**
 * The workflow's patches (docs/versioning.md): each id guards one change of the commands a history produces, so an
 * execution that started before the change replays its old path. Histories of each old path, recorded on the 1.0.0
 * workflow, are in test/replay/histories/v1.0.0-before-<id>/.
 */
export const PATCHES = {
  /** Compensate every step at or below the fence's rank, not only the steps this history started (948708a). */
  compensateByHaltedRank: 'compensate-by-halted-rank',
  /**
   * A cancel fences the order at once (haltOrder while the step still runs), so a provider call not made yet is
   * never made: the step finds its claim tombstoned when it re-checks the fence before calling.
   */
  fenceOnCancel: 'fence-on-cancel',
  /** A compensation that fails for good waits for an operator (`attention_required`) instead of ending the order. */
  compensationFailureWaits: 'compensation-failure-waits',
  /** planOrder runs outside the cancellation: a Temporal cancel before planning still halts the order. */
  planUnderShield: 'plan-under-shield',
} as const;
