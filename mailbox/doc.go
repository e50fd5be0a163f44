// Package mailbox owns the bounded mailbox every ZLink actor runs on: a
// message budget and a byte budget per owner, decided before a message is
// queued (admission), released when the message has been processed.
//
// Use: one Quota per actor (NewQuota), shared by the sender side and the
// mailbox (Producer(q), or New(q).Producer(), as the actor's protoactor
// MailboxProducer). A sender calls q.Admit(size); on success it posts
// Wrap(msg, size) through protoactor (directly, or as the Message of a
// *actor.MessageEnvelope), or, holding the *Mailbox, calls
// PostSized(msg, size) with no wrapper at all. The mailbox hands the inner
// message to the actor and releases size when the handler has returned or
// panicked. System messages and unwrapped user
// messages (protoactor's PoisonPill and the like) take no budget; the latter
// still count in the depth. System messages are drained before user messages
// and SuspendMailbox/ResumeMailbox are honoured as in protoactor's default
// mailbox. A handler panic is recovered and escalated to the actor's
// supervisor as a *Panic carrying the value and the stack.
//
// Quota is safe for concurrent use and never blocks. The mailbox's queues are
// guarded by one leaf mutex; the consumer takes user messages in batches of
// up to 64 per lock and checks the system queue before each message.
// MessageBatch values are not unpacked. A mailbox whose dispatcher is a
// TaskDispatcher schedules its run as a Task (no func value allocated per
// schedule).
//
// It implements protoactor-go's actor.Mailbox. It must not know about actors,
// supervision, the wire or the mesh: it only queues, counts and refuses.
package mailbox
