package main

import "fmt"

// keySpace is what the producers key their records with in a run that
// checks key order (--ordering key, --key-check): n keys k000, k001, ...,
// the empty key and the null key, each drawn as often as the others. The
// empty key is a key like any other to the input; each null-key record
// stands alone. A record's key is a function of the producer's salt and
// the record's sequence number only, so that keying draws nothing from the
// seeded generators (the transactional producer's partitions and aborts
// stay what the seed made them).
//
// A nil *keySpace keys nothing: every record has a null key, as in a run
// without the key check. A keySpace is a plain value, safe for concurrent
// use.
type keySpace struct {
	n    int
	salt uint64
}

// Salts of the two producers: their sequence numbers overlap.
const (
	liveKeySalt = 0x6c697665
	txnKeySalt  = 0x74786e73
)

// newKeySpace returns the key space of n keys for a producer (nil when
// n is 0: no keys).
func newKeySpace(n int, salt uint64) *keySpace {
	if n <= 0 {
		return nil
	}
	return &keySpace{n: n, salt: salt}
}

// key is the key of the producer's record seq: nil (a null key), empty, or
// one of the n keys.
func (k *keySpace) key(seq int64) []byte {
	if k == nil {
		return nil
	}
	switch i := int(mix64(uint64(seq)^k.salt) % uint64(k.n+2)); i {
	case k.n:
		return nil
	case k.n + 1:
		return []byte{}
	default:
		return fmt.Appendf(nil, "k%03d", i)
	}
}

// mix64 is splitmix64's finaliser: consecutive sequence numbers spread over
// the keys without a pattern a round robin over partitions could lock on to.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
