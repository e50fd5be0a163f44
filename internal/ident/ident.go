// Package ident makes the identities a running node needs: lifecycle
// generations, random RID suffixes and nonces, and the endpoint a bound
// socket advertises. It is shared by routemesh and fanout so both follow
// the same rules; it holds no state.
package ident

import (
	crand "crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"net"
	"strconv"
)

// Generation returns a new lifecycle generation: random, never 0.
// Generations are compared for equality only, never by size.
func Generation() uint64 {
	var b [8]byte
	for {
		_, _ = crand.Read(b[:])
		if g := binary.BigEndian.Uint64(b[:]); g != 0 {
			return g
		}
	}
}

// Hex returns n random bytes in hex (2n characters).
func Hex(n int) string {
	b := make([]byte, n)
	_, _ = crand.Read(b)
	return hex.EncodeToString(b)
}

// Nonce returns a fresh 16-byte challenge.
func Nonce() (out [16]byte) {
	_, _ = crand.Read(out[:])
	return out
}

// Advertised turns a bound address into the tcp:// endpoint peers dial:
// host when set, else the bound IP, with an unspecified IP (0.0.0.0, ::)
// advertised as 127.0.0.1.
func Advertised(addr net.Addr, host string) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return "tcp://" + addr.String()
	}
	if host == "" {
		host = tcp.IP.String()
		if tcp.IP.IsUnspecified() {
			host = "127.0.0.1"
		}
	}
	return "tcp://" + net.JoinHostPort(host, strconv.Itoa(tcp.Port))
}
