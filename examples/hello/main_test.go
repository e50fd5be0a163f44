package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestHello(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out strings.Builder
	if err := run(ctx, &out); err != nil {
		t.Fatal(err)
	}
	want := "channel call: hello player-1, this is lobby-1\ndirect call: pong from lobby-1 to gateway-1\n"
	if out.String() != want {
		t.Fatalf("output %q, want %q", out.String(), want)
	}
}
