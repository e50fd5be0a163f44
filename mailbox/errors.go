package mailbox

import (
	"strconv"

	"github.com/zlink-go/zlink/internal/zerr"
)

// ErrMailboxFull is returned (inside a *FullError) when an owner's mailbox
// refuses a message because its message budget or its byte budget is spent.
// It is the same value as zlink.ErrMailboxFull and zerr.ErrMailboxFull (the
// value lives in internal/zerr so that every layer returns one error).
var ErrMailboxFull = zerr.ErrMailboxFull

// Budget names the budget that refused a message.
type Budget uint8

const (
	// BudgetMessages is the message-count budget.
	BudgetMessages Budget = 1 + iota
	// BudgetBytes is the byte budget.
	BudgetBytes
)

// String returns "messages" or "bytes".
func (b Budget) String() string {
	switch b {
	case BudgetMessages:
		return "messages"
	case BudgetBytes:
		return "bytes"
	default:
		return "budget(" + strconv.Itoa(int(b)) + ")"
	}
}

// FullError says which budget refused a message, what that budget held when
// it refused, and its limit. It matches ErrMailboxFull with errors.Is.
type FullError struct {
	Budget  Budget // which budget refused
	Current int64  // messages or bytes held when it refused
	Max     int64  // the budget's limit
}

func (e *FullError) Error() string {
	return "zlink: mailbox full: " + e.Budget.String() + " budget " +
		strconv.FormatInt(e.Current, 10) + "/" + strconv.FormatInt(e.Max, 10)
}

// Is reports whether target is ErrMailboxFull.
func (e *FullError) Is(target error) bool { return target == zerr.ErrMailboxFull }
