package zguard

import (
	"fmt"
	"strings"
)

// Scheme is the zmq4 transport name registered by Register.
const Scheme = "zgtcp"

const (
	tcpPrefix   = "tcp://"
	guardPrefix = Scheme + "://"
)

// Endpoint turns "tcp://host:port" into "zgtcp://host:port". An endpoint that
// already uses Scheme is returned unchanged; any other scheme is an error.
func Endpoint(ep string) (string, error) {
	if strings.HasPrefix(ep, guardPrefix) {
		return ep, nil
	}
	rest, ok := strings.CutPrefix(ep, tcpPrefix)
	if !ok || rest == "" {
		return "", fmt.Errorf("%w: %q", ErrBadEndpoint, ep)
	}
	return guardPrefix + rest, nil
}

// TCPEndpoint turns "zgtcp://host:port" back into "tcp://host:port" for
// display and advertising. Other endpoints are returned unchanged.
func TCPEndpoint(ep string) string {
	if rest, ok := strings.CutPrefix(ep, guardPrefix); ok {
		return tcpPrefix + rest
	}
	return ep
}
