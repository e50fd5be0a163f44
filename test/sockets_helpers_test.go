package test

// Observing this process's TCP sockets: which connections and listeners it
// holds, read from /proc (the sockets whose inodes are among this
// process's file descriptors). Contract tests about physical connections
// count real sockets instead of trusting an API's shape.

import (
	"bufio"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// tcpSocket is one TCP socket of this process.
type tcpSocket struct {
	inode      string
	localPort  int
	remotePort int
	listening  bool
	connected  bool // ESTABLISHED
}

// processSockets returns this process's TCP sockets (IPv4 and IPv6), each
// once: the kernel builds /proc/net/tcp a page at a time, so a socket can
// be listed twice when the table changes between two reads of it.
func processSockets(t *testing.T) []tcpSocket {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("read /proc/self/fd: %v", err)
	}
	mine := map[string]bool{}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, "socket:[") {
			mine[strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]")] = true
		}
	}
	var out []tcpSocket
	seen := map[string]bool{}
	for _, table := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			if table == "/proc/self/net/tcp6" && os.IsNotExist(err) {
				continue
			}
			t.Fatalf("open %s: %v", table, err)
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) < 10 || !mine[f[9]] || seen[f[9]] {
				continue
			}
			seen[f[9]] = true
			out = append(out, tcpSocket{
				inode: f[9], localPort: hexPort(t, f[1]), remotePort: hexPort(t, f[2]),
				listening: f[3] == "0A", connected: f[3] == "01",
			})
		}
		_ = f.Close()
	}
	return out
}

func hexPort(t *testing.T, addr string) int {
	t.Helper()
	i := strings.LastIndexByte(addr, ':')
	p, err := strconv.ParseUint(addr[i+1:], 16, 16)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	return int(p)
}

// endpointPort returns the port of a tcp://HOST:PORT endpoint.
func endpointPort(t *testing.T, ep string) int {
	t.Helper()
	u, err := url.Parse(ep)
	if err != nil {
		t.Fatalf("endpoint %q: %v", ep, err)
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatalf("endpoint %q: %v", ep, err)
	}
	return p
}

// newSockets returns the sockets of now that were not in before.
func newSockets(before, now []tcpSocket) []tcpSocket {
	had := map[string]bool{}
	for _, s := range before {
		had[s.inode] = true
	}
	var out []tcpSocket
	for _, s := range now {
		if !had[s.inode] {
			out = append(out, s)
		}
	}
	return out
}

// countSockets counts the sockets for which match holds.
func countSockets(ss []tcpSocket, match func(tcpSocket) bool) int {
	n := 0
	for _, s := range ss {
		if match(s) {
			n++
		}
	}
	return n
}
