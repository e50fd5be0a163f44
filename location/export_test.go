package location

// KeySlot is keySlot for the external tests (compared with CLUSTER KEYSLOT).
var KeySlot = keySlot
