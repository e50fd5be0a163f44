// Package mailbox owns the bounded mailbox every ZLink actor runs on: a
// message budget and a byte budget per owner, decided before a message is
// queued (admission), released when the message has been processed.
//
// It implements protoactor-go's actor.Mailbox. It must not know about actors,
// supervision, the wire or the mesh: it only queues, counts and refuses.
package mailbox
