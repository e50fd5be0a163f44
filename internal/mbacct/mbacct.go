// Package mbacct is the seam between a mailbox.Quota and the protoactor
// mailbox that drains it (internal/pamailbox): the accounting only the
// consumer writes, which is no part of Quota's public API.
//
// Package mailbox sets Of when it is initialised; it owns the counters.
// This package owns nothing else and must not import either side.
package mbacct

// Account is the consumer's side of one quota. Every method is safe for
// concurrent use and never blocks.
type Account interface {
	// ReleaseN gives back n admitted messages and their bytes.
	ReleaseN(n, bytes int64)
	// AddProcessed counts n admitted messages as processed.
	AddProcessed(n int64)
	// AddFree adds d to the messages queued outside the budgets (they
	// count in the depth only).
	AddFree(d int64)
}

// Of returns the Account of q, a *mailbox.Quota. Set by package mailbox.
var Of func(q any) Account
