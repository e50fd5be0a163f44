package locationtest

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// command sends one command to addr (over TLS when cfg is set) and returns
// its reply: a simple or bulk string, or an integer in decimal. An error
// reply is an error. The harness uses it to drive and watch servers
// without the client under test.
func command(addr string, cfg *tls.Config, args ...string) (string, error) {
	replies, err := commands(addr, cfg, args)
	if err != nil {
		return "", err
	}
	return replies[0], nil
}

// commands sends cmds in order on one connection and returns their
// replies, like command.
func commands(addr string, cfg *tls.Config, cmds ...[]string) ([]string, error) {
	var c net.Conn
	var err error
	d := &net.Dialer{Timeout: time.Second}
	if cfg != nil {
		c, err = tls.DialWithDialer(d, "tcp", addr, cfg)
	} else {
		c, err = d.Dial("tcp", addr)
	}
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	var b strings.Builder
	for _, args := range cmds {
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		return nil, err
	}
	r := bufio.NewReader(c)
	replies := make([]string, len(cmds))
	for i := range cmds {
		if replies[i], err = readReply(r); err != nil {
			return nil, err
		}
	}
	return replies, nil
}

func readReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", fmt.Errorf("empty reply")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", fmt.Errorf("redis: %s", line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return "", fmt.Errorf("bulk reply %q", line)
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	}
	return "", fmt.Errorf("unsupported reply %q", line)
}

// infoField returns the value of field in an INFO or CLUSTER INFO reply.
func infoField(info, field string) string {
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), field+":"); ok {
			return v
		}
	}
	return ""
}

// Command sends one command to the server and returns its reply (a simple
// or bulk string, or an integer in decimal; an array reply is not
// supported). It fails the test on any error, an error reply included.
func (s *RedisServer) Command(t testing.TB, args ...string) string {
	t.Helper()
	v, err := command(s.Addr(), s.clientTLS, args...)
	if err != nil {
		t.Fatalf("locationtest: %s on %s: %v", strings.Join(args, " "), s.Addr(), err)
	}
	return v
}
