package spot

import (
	"errors"
	"testing"
	"time"

	"github.com/zlink-go/zlink/internal/fence"
)

func TestIncBox_ConfirmKillLapse(t *testing.T) {
	cfg := fence.Config{TTL: time.Second, RenewEvery: 200 * time.Millisecond, Margin: 200 * time.Millisecond}
	b := &incBox{cfg: cfg}
	t0 := time.Unix(100, 0)
	s := b.attach("A", "k", "x", t0)
	if b.attach("A", "k", "y", t0) != s {
		t.Fatal("one state per incarnation")
	}
	if !b.valid(s, t0.Add(500*time.Millisecond)) || b.valid(s, t0.Add(800*time.Millisecond)) {
		t.Fatal("a claim confirms its incarnation until TTL − margin")
	}
	// A probe that answers the same incarnation extends it.
	probes, lapsed := b.due(t0.Add(300*time.Millisecond), cfg.RenewEvery)
	if len(probes) != 1 || len(lapsed) != 0 {
		t.Fatalf("due: %d probes, %d lapsed", len(probes), len(lapsed))
	}
	tok := b.sent(s, t0.Add(300*time.Millisecond))
	if b.answered(s, tok, "A", nil) {
		t.Fatal("the same incarnation killed it")
	}
	if !b.valid(s, t0.Add(1000*time.Millisecond)) {
		t.Fatal("a confirmed probe did not extend the deadline")
	}
	// An error confirms nothing; another incarnation kills it once.
	tok = b.sent(s, t0.Add(600*time.Millisecond))
	b.answered(s, tok, "", errors.New("down"))
	tok = b.sent(s, t0.Add(700*time.Millisecond))
	if !b.answered(s, tok, "B", nil) {
		t.Fatal("a new incarnation must kill the state")
	}
	if b.valid(s, t0.Add(700*time.Millisecond)) {
		t.Fatal("valid after the shard changed incarnation")
	}
	// Detach forgets it; a new claim in A starts afresh.
	b.detach(s)
	b.detach(s)
	if s2 := b.attach("A", "k", "z", t0.Add(2*time.Second)); s2 == s || !b.valid(s2, t0.Add(2*time.Second)) {
		t.Fatal("a new claim after the old state died must start a new one")
	}
	// Confirmation lapses without answers.
	_, lapsed = b.due(t0.Add(10*time.Second), cfg.RenewEvery)
	if len(lapsed) != 1 {
		t.Fatalf("%d lapsed, want 1", len(lapsed))
	}
}
