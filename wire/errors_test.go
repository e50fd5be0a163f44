package wire

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/mailbox"
)

func TestCode_ErrorOfAndCodeOf(t *testing.T) {
	if fmt.Sprint(wireCodes()) != "[no_target timeout mailbox_full busy peer_lost too_large handler cancelled shutting_down protocol unknown_packet bad_payload cycle fenced outcome_unknown]" ||
		CodeBadPayload != 12 || CodeOutcomeUnknown != 1002 {
		t.Fatalf("codes changed: they are part of the protocol (append only): %v", wireCodes())
	}
	names := map[string]bool{}
	sentinels := map[error]Code{}
	for _, c := range wireCodes() {
		t.Run(c.String(), func(t *testing.T) {
			s := c.Sentinel()
			if prev, dup := sentinels[s]; dup {
				t.Fatalf("code %v shares its sentinel with %v", c, prev)
			}
			sentinels[s] = c
			if names[c.String()] {
				t.Fatalf("duplicate name %q", c)
			}
			names[c.String()] = true

			err := ErrorOf(c, "remote says no")
			if !errors.Is(err, s) {
				t.Fatalf("ErrorOf(%v) does not match %v", c, s)
			}
			if errors.Unwrap(err) != s {
				t.Fatal("RemoteError does not unwrap to its sentinel")
			}
			for _, other := range wireCodes() {
				if other != c && errors.Is(err, other.Sentinel()) {
					t.Fatalf("ErrorOf(%v) also matches %v", c, other)
				}
			}
			if got := CodeOf(s); got != c {
				t.Fatalf("CodeOf(%v) = %v", s, got)
			}
			if got := CodeOf(fmt.Errorf("handler: %w", s)); got != c {
				t.Fatalf("CodeOf(wrapped %v) = %v", s, got)
			}
			if got := CodeOf(err); got != c {
				t.Fatalf("CodeOf(ErrorOf(%v)) = %v", c, got)
			}
			if got := CodeOf(fmt.Errorf("relay: %w", err)); got != c {
				t.Fatalf("CodeOf(wrapped RemoteError %v) = %v", c, got)
			}
			// Through an Error envelope on the wire.
			env := ErrorEnvelope(42, fmt.Errorf("ctx: %w", s))
			b, aerr := AppendFrame(nil, &Frame{Type: FrameBatch, Batch: []Envelope{env}})
			if aerr != nil {
				t.Fatal(aerr)
			}
			f, derr := DecodeFrame(b)
			if derr != nil {
				t.Fatal(derr)
			}
			got := f.Batch[0].Err()
			if !errors.Is(got, s) || f.Batch[0].Corr != 42 {
				t.Fatalf("error envelope lost its sentinel: %v", got)
			}
		})
	}
}

// wireCodes lists the codes of the results' table that cross the wire.
func wireCodes() []Code {
	var cs []Code
	for _, r := range zerr.Table {
		if r.Code != 0 {
			cs = append(cs, Code(r.Code))
		}
	}
	return cs
}

func TestCode_SentinelsAreTheLeafValues(t *testing.T) {
	aliases := map[Code]error{
		CodeNoTarget: ErrNoTarget, CodeTimeout: ErrTimeout, CodeMailboxFull: ErrMailboxFull,
		CodeBusy: ErrBusy, CodePeerLost: ErrPeerLost, CodeTooLarge: ErrTooLarge,
		CodeHandler: ErrHandler, CodeCancelled: ErrCancelled, CodeShuttingDown: ErrShuttingDown,
		CodeProtocol: ErrProtocol, CodeUnknownPacket: ErrUnknownPacket, CodeBadPayload: ErrBadPayload,
	}
	leaf := map[Code]error{
		CodeNoTarget: zerr.ErrNoTarget, CodeTimeout: zerr.ErrTimeout, CodeMailboxFull: zerr.ErrMailboxFull,
		CodeBusy: zerr.ErrBusy, CodePeerLost: zerr.ErrPeerLost, CodeTooLarge: zerr.ErrTooLarge,
		CodeHandler: zerr.ErrHandler, CodeCancelled: zerr.ErrCancelled, CodeShuttingDown: zerr.ErrShuttingDown,
		CodeProtocol: zerr.ErrProtocol, CodeUnknownPacket: zerr.ErrUnknownPacket, CodeBadPayload: zerr.ErrBadPayload,
		CodeCycle: zerr.ErrCycle, CodeFenced: zerr.ErrFenced, CodeOutcomeUnknown: zerr.ErrOutcomeUnknown,
	}
	if len(leaf) != len(wireCodes()) {
		t.Fatalf("%d codes, %d sentinels listed here", len(wireCodes()), len(leaf))
	}
	for c, want := range leaf {
		if c.Sentinel() != want || c < 1000 && aliases[c] != want {
			t.Errorf("%v: alias %v, Sentinel() %v, want the leaf value %v", c, aliases[c], c.Sentinel(), want)
		}
	}
	full := &mailbox.FullError{Budget: mailbox.BudgetBytes, Current: 10, Max: 8}
	if CodeOf(fmt.Errorf("tell: %w", full)) != CodeMailboxFull {
		t.Fatal("typed mailbox error does not map to CodeMailboxFull")
	}
	if !errors.Is(ErrorOf(CodeMailboxFull, full.Error()), mailbox.ErrMailboxFull) {
		t.Fatal("caller cannot match mailbox.ErrMailboxFull")
	}
	if !errors.Is(ErrorOf(CodeTimeout, ""), zerr.ErrTimeout) {
		t.Fatal("caller cannot match the timeout sentinel")
	}
}

func TestCode_Unknown(t *testing.T) {
	if CodeOf(nil) != 0 {
		t.Fatal("CodeOf(nil) != 0")
	}
	if CodeOf(errors.New("boom")) != CodeHandler {
		t.Fatal("unknown error is not CodeHandler")
	}
	if CodeOf(context.Canceled) != CodeCancelled || CodeOf(fmt.Errorf("x: %w", context.DeadlineExceeded)) != CodeTimeout {
		t.Fatal("context errors not mapped")
	}
	err := ErrorOf(999, "from the future")
	if !errors.Is(err, ErrHandler) || CodeOf(err) != 999 {
		t.Fatalf("unknown code: %v / %v", err, CodeOf(err))
	}
	if Code(999).String() != "code(999)" {
		t.Fatal(Code(999).String())
	}
	if got := ErrorOf(CodeBusy, "match full").Error(); got != "zlink: busy: match full" {
		t.Fatalf("Error() = %q", got)
	}
	relayed := ErrorEnvelope(1, ErrorOf(CodeBusy, "match full"))
	if string(relayed.Payload) != "match full" || relayed.Code != CodeBusy {
		t.Fatalf("relayed error rewritten: %+v", relayed)
	}
	if (&Envelope{Kind: KindReply}).Err() != nil {
		t.Fatal("Err on a reply is not nil")
	}
}

func TestCheckLimit(t *testing.T) {
	if err := CheckLimit(100, 100); err != nil {
		t.Fatal(err)
	}
	err := CheckLimit(101, 100)
	var tl *TooLargeError
	if !errors.Is(err, ErrTooLarge) || !errors.As(err, &tl) || tl.Size != 101 || tl.Limit != 100 {
		t.Fatalf("CheckLimit(101, 100) = %v", err)
	}
	if CheckLimit(1<<20, 0) != nil {
		t.Fatal("limit 0 should mean MaxFrameSize")
	}
	if CheckLimit(-1, 0) == nil {
		t.Fatal("negative size accepted")
	}
}

func TestEncoder_RepresentationLimit(t *testing.T) {
	var e encoder
	e.tooLarge(int(MaxFrameSize) + 1)
	if !errors.Is(e.err, ErrTooLarge) {
		t.Fatalf("err = %v", e.err)
	}
	e = encoder{}
	e.arrayHeader(int(MaxFrameSize) + 1)
	e.mapHeader(int(MaxFrameSize) + 1)
	if !errors.Is(e.err, ErrTooLarge) || len(e.b) != 0 {
		t.Fatalf("oversized headers: err=%v wrote %d bytes", e.err, len(e.b))
	}
}
