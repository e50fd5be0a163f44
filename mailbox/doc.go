// Package mailbox owns the admission budgets every ZLink actor's mailbox
// runs on: a message budget and a byte budget per owner, decided before a
// message is queued (admission), released when the message has been
// processed.
//
// Use: one Quota per actor (NewQuota, or NewCompactQuota for actors that
// are many and rarely contended). A sender calls q.Admit(size): it
// reserves one message and size bytes, or fails with a *FullError naming
// the budget that refused (matching ErrMailboxFull); it never blocks. The
// actor's mailbox releases the reservation once the handler has returned
// or panicked, unless the message took its budget over (BudgetKeeper).
// A handler panic reaches the actor's supervisor as a *Panic carrying the
// value and the stack. Stats is a copied snapshot of the counters.
//
// Quota is safe for concurrent use and never blocks. The mailbox itself
// (queues, batching, the protoactor-go adapter) lives in
// internal/pamailbox and settles the quota's consumer-side counters
// through internal/mbacct; no exported signature here names a protoactor
// type. It must not know about actors, supervision, the wire or the mesh:
// it only counts and refuses.
package mailbox
