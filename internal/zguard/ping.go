package zguard

import (
	"bytes"
	"io"
)

// pingLimit is the largest PING body answered: "\x04PING", a 2-byte TTL
// and a context of at most 16 bytes (ZMTP 3.1). A larger command is
// skipped unanswered.
const pingLimit = 1 + 4 + 2 + 16

// skipCommand consumes the body (size bytes) of a command frame read
// after the handshake (a direct read, rmu held). A ZMTP 3.1 PING is
// answered with a PONG carrying its context, as libzmq expects with
// ZMQ_HEARTBEAT_IVL on (zmq4 answers PING on the connections it reads
// itself); every other command is dropped.
func (c *conn) skipCommand(size uint64) error {
	if size > pingLimit {
		if _, err := c.br.Discard(int(size)); err != nil {
			return c.failRead(err, false)
		}
		return nil
	}
	var buf [pingLimit]byte
	body := buf[:size]
	if _, err := io.ReadFull(c.br, body); err != nil {
		return c.failRead(err, false)
	}
	if len(body) < 7 || !bytes.HasPrefix(body, []byte("\x04PING")) {
		return nil
	}
	pong := make([]byte, 0, 2+5+16)
	pong = append(pong, flagCommand, byte(5+len(body)-7))
	pong = append(pong, "\x04PONG"...)
	pong = append(pong, body[7:]...)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return nil // the read side learns of it on its own
	}
	if !c.wp.atHeader() || c.wp.more() && !c.wp.command() {
		return nil // inside a message: this PING goes unanswered
	}
	_, _ = c.writeLocked(pong)
	return nil
}
