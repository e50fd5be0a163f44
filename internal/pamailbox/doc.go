// Package pamailbox owns the bounded mailbox every ZLink actor runs on,
// as a protoactor-go actor.Mailbox: a user queue accounted in the actor's
// mailbox.Quota and a system queue that bypasses the budgets.
//
// Use: New(q).Producer() as the actor's protoactor MailboxProducer (or
// Producer(q)). A sender that has called q.Admit(size) posts Wrap(msg,
// size) through protoactor (directly, or as the Message of a
// *actor.MessageEnvelope), or, holding the *Mailbox, calls
// PostSized(msg, size) with no wrapper at all. The mailbox hands the inner
// message to the actor and releases size when the handler has returned or
// panicked. System messages and unwrapped user messages (protoactor's
// PoisonPill and the like, control messages) take no budget; the latter
// still count in the depth. System messages are drained before user
// messages and SuspendMailbox/ResumeMailbox are honoured as in
// protoactor's default mailbox. A handler panic is recovered and escalated
// to the actor's supervisor as a *mailbox.Panic carrying the value and
// the stack.
//
// The queues are guarded by one leaf mutex; the consumer takes user
// messages in batches of up to 64 per lock and checks the system queue
// before each message. MessageBatch values are not unpacked.
//
// It is internal so that the public mailbox package names no protoactor
// type; the actors package is its only user. It must not know about
// actors, supervision, the wire or the mesh: it only queues, counts and
// refuses.
package pamailbox
