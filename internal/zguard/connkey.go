package zguard

import (
	"strconv"
	"sync/atomic"
)

// Connection keys. An identity names a peer socket, and a peer that
// reconnects brings its identity to a new connection; an owner that keys
// its state by identity can take a late event or message of the closed
// connection for the new one's. A key names one inbound connection: its
// identity, '#', and the connection's number in this process, never
// reused. Received and ConnEvent carry it, and Inbound's calls take it
// and act on that connection only: on a connection that has closed, they
// do nothing (a send reports ErrNotConnected), whatever took its identity
// since.

// connSerials numbers the conns of this process from 1 (conn.serial).
var connSerials atomic.Uint64

// ConnKey is the key of the connection numbered serial that announced
// identity.
func ConnKey(identity string, serial uint64) string {
	return identity + "#" + strconv.FormatUint(serial, 10)
}

// KeyIdentity is the identity part of a connection key (the key itself
// when it has no number).
func KeyIdentity(key string) string {
	id, _, ok := splitKey(key)
	if !ok {
		return key
	}
	return id
}

// splitKey splits a key at its last '#': the identity (which may hold '#'
// itself) and the number after it.
func splitKey[T string | []byte](key T) (T, uint64, bool) {
	i := len(key) - 1
	for i >= 0 && key[i] != '#' {
		i--
	}
	var n uint64
	digits := key[i+1:]
	if i < 0 || len(digits) == 0 || len(digits) > 19 {
		return key, 0, false
	}
	for j := range len(digits) {
		d := digits[j] - '0'
		if d > 9 {
			return key, 0, false
		}
		n = n*10 + uint64(d)
	}
	return key[:i], n, true
}

// keyed finds the connection key names, and its listener: the one that
// holds the key's identity, if it is the key's connection.
func (in *Inbound) keyed(key []byte) (*listener, *conn) {
	id, serial, ok := splitKey(key)
	if !ok {
		return nil, nil
	}
	l, c := in.lookup(id)
	if c == nil || c.serial != serial {
		return nil, nil
	}
	return l, c
}
