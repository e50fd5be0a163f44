package routemesh

import (
	"bytes"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/zlink-go/zlink/internal/zguard"
)

// Every refusal is counted; the warnings are one per refusalLogEvery at
// most, each saying how many were refused since the one before.
func TestRefusalLog_CountsEveryRefusalAndRateLimitsWarnings(t *testing.T) {
	var buf bytes.Buffer
	var count atomic.Uint64
	now := time.Unix(1000, 0)
	r := newRefusalLog(zerolog.New(&buf), &count, func() time.Time { return now })
	busy := &zguard.PendingLimitError{PerSource: true, Limit: 16}
	for range 1000 {
		r.refused("127.0.0.2:1", busy)
		now = now.Add(time.Millisecond) // 1000 refusals in 1 s
	}
	now = now.Add(refusalLogEvery)
	r.refused("127.0.0.3:1", zguard.ErrNoGreeting)
	r.refused("127.0.0.4:1", &zguard.TLSError{Kind: zguard.ErrTLSUntrusted}) // counted, logged by tlsLog
	if got := count.Load(); got != 1002 {
		t.Fatalf("counted %d refusals, want 1002", got)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d warnings, want 2:\n%s", len(lines), buf.String())
	}
	for i, want := range []string{`"refused":1,"remote":"127.0.0.2:1","refusal":"too_many_pending_from_source"`,
		`"refused":1000,"remote":"127.0.0.3:1","refusal":"silent_after_connect"`} {
		if !strings.Contains(lines[i], want) || !strings.Contains(lines[i], `"level":"warn"`) {
			t.Errorf("warning %d = %s, want %s", i, lines[i], want)
		}
	}
}

func TestRefusalKind(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{&zguard.PendingLimitError{Limit: 64}, "too_many_pending"},
		{&zguard.PendingLimitError{PerSource: true}, "too_many_pending_from_source"},
		{zguard.ErrNoGreeting, "silent_after_connect"},
		{zguard.ErrHandshakeTimeout, "handshake_timeout"},
		{zguard.ErrSilent, "silent_after_handshake"},
		{zguard.ErrNotAuthenticated, "not_authenticated"},
		{&zguard.FrameTooLargeError{Size: 1 << 40}, "frame_too_large"},
		{zguard.ErrDuplicateIdentity, "duplicate_identity"},
		{fmt.Errorf("x: %w", zguard.ErrBadGreeting), "malformed_handshake"},
	} {
		if got := refusalKind(tt.err); got != tt.want {
			t.Errorf("refusalKind(%v) = %s, want %s", tt.err, got, tt.want)
		}
	}
}
