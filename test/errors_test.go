package test

import "github.com/zlink-go/zlink/wire"

var errUnknownPacket = wire.ErrUnknownPacket
