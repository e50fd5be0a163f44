package zerr

import (
	"context"
	"errors"
)

// ErrNodeFailed ends every pending and later call of a MeshNode in the
// terminal Failed state: one of its supervised actors failed past its
// restart intensity and the node could not be rebuilt.
var ErrNodeFailed = errors.New("zlink: MeshNode failed")

// Ran says whether a call's handler ran when the call ended with an error:
// what a caller needs to know before it retries.
type Ran uint8

const (
	// RanNo: the handler did not run; the call is safe to retry.
	RanNo Ran = 1 + iota
	// RanUnknown: the handler may or may not have run (or may still run).
	RanUnknown
	// RanYes: the handler ran.
	RanYes
	// RanDepends: it depends on where the call ended (a request refused
	// before its handler, or a reply refused after it); the error's text
	// says which.
	RanDepends
)

func (r Ran) String() string {
	switch r {
	case RanNo:
		return "did not run"
	case RanUnknown:
		return "unknown"
	case RanYes:
		return "ran"
	case RanDepends:
		return "depends"
	}
	return "?"
}

// Row is one terminal result of a call: its sentinel, the name it has in
// Go (zlink.<Ident>), its wire code (0: it never crosses the wire — the
// caller's own node decides it), its name in metrics and JSON, and
// whether the handler ran.
type Row struct {
	Err   error
	Ident string
	Code  uint16
	Name  string
	Ran   Ran
}

// Table is the one table of the terminal results of calls: every package
// returns these values, the wire carries their codes, counters count by
// their rows. Codes are part of the protocol: append only. The RouteMesh
// codes are 1–999, the Spot codes 1000 and up.
var Table = [...]Row{
	{ErrNoTarget, "ErrNoTarget", 1, "no_target", RanNo},
	{ErrTimeout, "ErrTimeout", 2, "timeout", RanUnknown},
	{ErrMailboxFull, "ErrMailboxFull", 3, "mailbox_full", RanNo},
	{ErrBusy, "ErrBusy", 4, "busy", RanNo},
	{ErrPeerLost, "ErrPeerLost", 5, "peer_lost", RanUnknown},
	{ErrTooLarge, "ErrTooLarge", 6, "too_large", RanDepends},
	{ErrHandler, "ErrHandler", 7, "handler", RanYes},
	{ErrCancelled, "ErrCancelled", 8, "cancelled", RanUnknown},
	{ErrShuttingDown, "ErrShuttingDown", 9, "shutting_down", RanDepends},
	{ErrProtocol, "ErrProtocol", 10, "protocol", RanUnknown},
	{ErrUnknownPacket, "ErrUnknownPacket", 11, "unknown_packet", RanNo},
	{ErrBadPayload, "ErrBadPayload", 12, "bad_payload", RanDepends},
	{ErrCycle, "ErrCycle", 1000, "cycle", RanNo},
	{ErrFenced, "ErrFenced", 1001, "fenced", RanUnknown},
	{ErrOutcomeUnknown, "ErrOutcomeUnknown", 1002, "outcome_unknown", RanYes},
	{ErrNodeFailed, "ErrNodeFailed", 0, "node_failed", RanUnknown},
	{ErrRole, "ErrRole", 0, "role", RanNo},
}

// Slots is the number of result slots a counter by result needs: slot 0
// is success, slot i+1 is Table[i], the last slot any other error.
const Slots = len(Table) + 2

// matchOrder is the order rows are matched in: an error that wraps two
// sentinels counts as the more specific (the Spot results before the
// RouteMesh ones they may wrap); ErrHandler is what nothing else matched.
var matchOrder = func() []int {
	var spots, rest []int
	for i, r := range Table {
		switch {
		case r.Err == ErrHandler:
		case r.Code >= 1000:
			spots = append(spots, i)
		default:
			rest = append(rest, i)
		}
	}
	return append(spots, rest...)
}()

// handlerRow is ErrHandler's row.
var handlerRow = func() int {
	for i, r := range Table {
		if r.Err == ErrHandler {
			return i
		}
	}
	panic("zerr: no ErrHandler row")
}()

// RowOf returns the row an error is a terminal result of: the first row
// whose sentinel it matches (errors.Is), context.Canceled as ErrCancelled
// and context.DeadlineExceeded as ErrTimeout, anything else ErrHandler's
// row. wire says ErrHandler's row only for errors with a code of their
// own; wireOnly skips the rows without a wire code. RowOf(nil) is -1.
func RowOf(err error, wireOnly bool) int {
	if err == nil {
		return -1
	}
	for _, i := range matchOrder {
		if wireOnly && Table[i].Code == 0 {
			continue
		}
		if errors.Is(err, Table[i].Err) {
			return i
		}
	}
	switch {
	case errors.Is(err, context.Canceled):
		return rowOfErr(ErrCancelled)
	case errors.Is(err, context.DeadlineExceeded):
		return rowOfErr(ErrTimeout)
	}
	return handlerRow
}

func rowOfErr(e error) int {
	for i, r := range Table {
		if r.Err == e {
			return i
		}
	}
	return handlerRow
}

// ByCode returns the row of a wire code.
func ByCode(code uint16) (Row, bool) {
	if code == 0 {
		return Row{}, false
	}
	for _, r := range Table {
		if r.Code == code {
			return r, true
		}
	}
	return Row{}, false
}

// SlotOf is the result slot of err (0: nil).
func SlotOf(err error) int { return RowOf(err, false) + 1 }

// SlotOfCode is the result slot of a wire code (the last slot for a code
// no row has).
func SlotOfCode(code uint16) int {
	for i, r := range Table {
		if r.Code == code && code != 0 {
			return i + 1
		}
	}
	return Slots - 1
}

// SlotName names a result slot: "ok", a row's Name, or "other".
func SlotName(slot int) string {
	switch {
	case slot == 0:
		return "ok"
	case slot > 0 && slot <= len(Table):
		return Table[slot-1].Name
	}
	return "other"
}
