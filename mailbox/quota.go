package mailbox

import (
	"math/bits"
	"sync/atomic"
)

// Quota is the atomic accounting shared between the senders of one owner and
// that owner's mailbox: how many messages and bytes are admitted but not yet
// processed, against a message budget and a byte budget.
//
// All methods are safe for concurrent use and never block. Admit decides with
// a single compare-and-swap over both budgets at once, so a budget is never
// exceeded, not even transiently, and a refusal is only ever given when the
// admitted-but-unprocessed messages really leave no room.
type Quota struct {
	maxMsgs  int64 // 0 = unlimited
	maxBytes int64 // 0 = unlimited

	// When both budgets are limited, word packs the admitted message count
	// in the high bits and the admitted bytes in the low `shift` bits, so one
	// CAS reserves both. Otherwise msgs and bytes are used, each with its own
	// CAS if it is limited, or a plain add if it is not.
	packed bool
	shift  uint

	word  atomic.Uint64
	msgs  atomic.Int64
	bytes atomic.Int64

	processed atomic.Int64 // written by the consumer only
	free      atomic.Int64 // queued messages that take no budget (protoactor internals)
	rejected  atomic.Int64
}

// Stats is a copied snapshot of a Quota.
type Stats struct {
	Depth       int64 // messages queued or in processing (budgeted and unbudgeted)
	Bytes       int64 // bytes admitted and not yet processed
	MaxMessages int64 // message budget, 0 = unlimited
	MaxBytes    int64 // byte budget, 0 = unlimited
	Admitted    int64 // messages admitted since creation (Processed + budgeted depth)
	Rejected    int64 // messages refused since creation
	Processed   int64 // admitted messages released after processing
}

// NewQuota returns a Quota with the given budgets. A budget of 0 or less is
// unlimited. When both are limited their bit widths must fit one 64-bit word
// together (for example 16M messages and 1 TiB); a message budget that does
// not fit beside the byte budget is lowered to the largest one that does.
func NewQuota(maxMessages, maxBytes int64) *Quota {
	// Padded on both sides, so a quota that many senders hit shares no
	// cache line with its neighbours.
	p := &struct {
		_ [64]byte
		q Quota
		_ [64]byte
	}{}
	p.q.init(maxMessages, maxBytes)
	return &p.q
}

// NewCompactQuota is NewQuota without the padding, for actors that are
// many and rarely contended (Spots): about 100 bytes less each.
func NewCompactQuota(maxMessages, maxBytes int64) *Quota {
	q := &Quota{}
	q.init(maxMessages, maxBytes)
	return q
}

func (q *Quota) init(maxMessages, maxBytes int64) {
	if maxMessages > 0 {
		q.maxMsgs = maxMessages
	}
	if maxBytes > 0 {
		q.maxBytes = maxBytes
	}
	if q.maxMsgs > 0 && q.maxBytes > 0 {
		q.packed = true
		q.shift = uint(bits.Len64(uint64(q.maxBytes)))
		room := 64 - q.shift
		if room > 62 {
			room = 62
		}
		if limit := int64(1)<<room - 1; q.maxMsgs > limit {
			q.maxMsgs = limit
		}
	}
}

// Admit reserves one message and size bytes, or returns a *FullError naming
// the budget that refused (it matches ErrMailboxFull). A negative size counts
// as 0. It never blocks.
func (q *Quota) Admit(size int64) error {
	if size < 0 {
		size = 0
	}
	if q.packed {
		return q.admitPacked(size)
	}
	if q.maxMsgs > 0 {
		for {
			cur := q.msgs.Load()
			if cur >= q.maxMsgs {
				return q.refuse(BudgetMessages, cur, q.maxMsgs)
			}
			if q.msgs.CompareAndSwap(cur, cur+1) {
				break
			}
		}
		q.bytes.Add(size)
	} else if q.maxBytes > 0 {
		for {
			cur := q.bytes.Load()
			if cur+size > q.maxBytes || cur+size < cur {
				return q.refuse(BudgetBytes, cur, q.maxBytes)
			}
			if q.bytes.CompareAndSwap(cur, cur+size) {
				break
			}
		}
		q.msgs.Add(1)
	} else {
		q.msgs.Add(1)
		if size != 0 {
			q.bytes.Add(size)
		}
	}
	return nil
}

func (q *Quota) admitPacked(size int64) error {
	mask := uint64(1)<<q.shift - 1
	for {
		w := q.word.Load()
		msgs := int64(w >> q.shift)
		byt := int64(w & mask)
		if msgs >= q.maxMsgs {
			return q.refuse(BudgetMessages, msgs, q.maxMsgs)
		}
		if size > q.maxBytes-byt {
			return q.refuse(BudgetBytes, byt, q.maxBytes)
		}
		// byt+size <= maxBytes < 1<<shift: no carry into the message field.
		if q.word.CompareAndSwap(w, w+1<<q.shift+uint64(size)) {
			return nil
		}
	}
}

func (q *Quota) refuse(b Budget, cur, limit int64) error {
	q.rejected.Add(1)
	return &FullError{Budget: b, Current: cur, Max: limit}
}

// Release gives back one message and size bytes reserved by Admit, and counts
// the message as processed. Every successful Admit must be matched by exactly
// one Release with the same size; the mailbox does this after the message's
// handler returns.
func (q *Quota) Release(size int64) {
	q.release(size)
	q.processed.Add(1)
}

// release gives back the reservation without counting the message as
// processed; the mailbox publishes its processed count in batches.
func (q *Quota) release(size int64) { q.releaseN(1, size) }

// releaseN gives back n messages and size bytes at once (the mailbox
// releases in small batches so producer and consumer do not fight over the
// quota's cache line for every message).
func (q *Quota) releaseN(n, size int64) {
	if n <= 0 {
		return
	}
	if size < 0 {
		size = 0
	}
	if q.packed {
		delta := uint64(n)<<q.shift + uint64(size)
		q.word.Add(^(delta - 1))
	} else {
		q.msgs.Add(-n)
		if size != 0 {
			q.bytes.Add(-size)
		}
	}
}

// depthBytes returns the budgeted messages and bytes currently held.
func (q *Quota) depthBytes() (int64, int64) {
	if q.packed {
		w := q.word.Load()
		return int64(w >> q.shift), int64(w & (uint64(1)<<q.shift - 1))
	}
	return q.msgs.Load(), q.bytes.Load()
}

// Stats returns a snapshot of the counters. Fields are read one by one, so
// under concurrent use they may come from slightly different instants, but
// Depth and Bytes are each within their budget. While a mailbox is busy,
// Processed (and so Admitted) may lag by up to one batch of 64 messages;
// they are exact whenever the mailbox is idle.
func (q *Quota) Stats() Stats {
	processed := q.processed.Load()
	d, b := q.depthBytes()
	return Stats{
		Depth:       d + q.free.Load(),
		Bytes:       b,
		MaxMessages: q.maxMsgs,
		MaxBytes:    q.maxBytes,
		Admitted:    processed + d,
		Rejected:    q.rejected.Load(),
		Processed:   processed,
	}
}
