package ident

import (
	"net"
	"testing"
)

func TestGenerationNeverZeroAndFresh(t *testing.T) {
	seen := map[uint64]bool{}
	for i := 0; i < 1000; i++ {
		g := Generation()
		if g == 0 || seen[g] {
			t.Fatalf("generation %d (repeat=%v)", g, seen[g])
		}
		seen[g] = true
	}
}

func TestHexAndNonce(t *testing.T) {
	if a, b := Hex(6), Hex(6); len(a) != 12 || a == b {
		t.Fatalf("Hex: %q %q", a, b)
	}
	if a, b := Nonce(), Nonce(); a == b {
		t.Fatal("two nonces are equal")
	}
}

func TestAdvertised(t *testing.T) {
	cases := []struct {
		addr net.Addr
		host string
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4(0, 0, 0, 0), Port: 7001}, "", "tcp://127.0.0.1:7001"},
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 7001}, "", "tcp://127.0.0.2:7001"},
		{&net.TCPAddr{IP: net.IPv4(0, 0, 0, 0), Port: 7001}, "10.0.0.5", "tcp://10.0.0.5:7001"},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 9}, "", "tcp://127.0.0.1:9"},
		{&net.TCPAddr{IP: net.ParseIP("::1"), Port: 9}, "", "tcp://[::1]:9"},
	}
	for _, c := range cases {
		if got := Advertised(c.addr, c.host); got != c.want {
			t.Errorf("Advertised(%v, %q) = %q, want %q", c.addr, c.host, got, c.want)
		}
	}
}
