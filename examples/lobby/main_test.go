package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestLobby(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out strings.Builder
	if err := run(ctx, &out, 16); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "first half: ") ||
		lines[1] != "after draining match-a: match-b=8" {
		t.Fatalf("output:\n%s", out.String())
	}
	var rooms, waiting int
	if _, err := fmt.Sscanf(lines[2], "rooms started: %d, players waiting for a partner: %d", &rooms, &waiting); err != nil ||
		2*rooms+waiting != 16 || waiting > 2 {
		t.Fatalf("rooms line %q (%v): every player is in a room or waiting, at most one per Server", lines[2], err)
	}
}
