package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestRoom(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out strings.Builder
	if err := run(ctx, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || lines[0] != "room r1 ready with [p1 p2 p3 p4 p5]" || !strings.HasPrefix(lines[1], "room r1 ended after ") {
		t.Fatalf("output:\n%s", out.String())
	}
}
