package mailbox

// BudgetKeeper is a user message that can take its admission budget over
// from the mailbox while its actor handles it (to queue it somewhere else
// that counts as queued). When KeptBudget reports true once the actor
// returned, the mailbox neither releases the message's budget nor counts it
// as processed: whoever kept it calls Quota.Release with its admitted size,
// exactly once.
type BudgetKeeper interface{ KeptBudget() bool }
