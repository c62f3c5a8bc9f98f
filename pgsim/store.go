package pgsim

import (
	"sync"
	"time"
)

// Transaction statuses and settlement reasons of the original.
const (
	StatusPending = "PENDING" // accepted, not settled yet
	StatusSuccess = "SUCCESS" // settled: approved (70 %)
	StatusFailed  = "FAILED"  // settled: refused (30 %)

	ReasonLimit   = "한도초과입니다. 다른 카드를 선택해주세요."   // FAILED, limit exceeded (20 %)
	ReasonInvalid = "잘못된 카드입니다. 다른 카드를 선택해주세요." // FAILED, invalid card (10 %)
	ReasonOK      = "정상 승인되었습니다."               // SUCCESS (70 %)
)

// Transaction is one accepted payment.
type Transaction struct {
	TransactionKey string `json:"transactionKey"`   // "yyyyMMdd:TR:xxxxxx"
	OrderID        string `json:"orderId"`          // the request's orderId
	CardType       string `json:"cardType"`         // SAMSUNG, KB or HYUNDAI
	CardNo         string `json:"cardNo"`           // xxxx-xxxx-xxxx-xxxx
	Amount         int64  `json:"amount"`           // whole currency units, > 0
	Status         string `json:"status"`           // PENDING, SUCCESS or FAILED
	Reason         string `json:"reason,omitempty"` // "" while PENDING (null, omitted)

	userID      string
	callbackURL string
	seq         uint64 // creation order
}

// store holds transactions, scoped by user, within a byte budget: beyond it
// the oldest transactions are forgotten (counted in evicted).
type store struct {
	mu       sync.Mutex
	byKey    map[string]*Transaction
	byOrder  map[orderKey][]*Transaction // creation order
	keys     *keyGen
	fifo     []*Transaction // creation order, oldest at head
	head     int
	bytes    int // txBytes of the stored transactions
	maxBytes int
	evicted  int
}

type orderKey struct{ user, order string }

func newStore(keys *keyGen, maxBytes int) *store {
	return &store{byKey: make(map[string]*Transaction), byOrder: make(map[orderKey][]*Transaction), keys: keys, maxBytes: maxBytes}
}

// evictLocked forgets the oldest transactions until the budget holds room
// for need more bytes (the newest one always stays).
func (s *store) evictLocked(need int) {
	for s.maxBytes > 0 && s.bytes+need > s.maxBytes && s.head < len(s.fifo) {
		t := s.fifo[s.head]
		s.fifo[s.head] = nil
		s.head++
		delete(s.byKey, t.TransactionKey)
		ok := orderKey{t.userID, t.OrderID}
		if list := s.byOrder[ok]; len(list) <= 1 {
			delete(s.byOrder, ok)
		} else {
			s.byOrder[ok] = list[1:]
		}
		s.bytes -= txBytes(t)
		s.evicted++
	}
	if s.head > 1024 && s.head*2 > len(s.fifo) {
		s.fifo = append(s.fifo[:0], s.fifo[s.head:]...)
		s.head = 0
	}
}

// create stores a PENDING transaction for p under user and returns a copy.
func (s *store) create(now time.Time, user string, p PaymentRequest) Transaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	key, seq := s.keys.next(now)
	t := &Transaction{
		TransactionKey: key, OrderID: p.OrderID, CardType: p.CardType, CardNo: p.CardNo, Amount: p.Amount,
		Status: StatusPending, userID: user, callbackURL: p.CallbackURL, seq: seq,
	}
	n := txBytes(t)
	s.evictLocked(n)
	s.byKey[key] = t
	ok := orderKey{user, p.OrderID}
	s.byOrder[ok] = append(s.byOrder[ok], t)
	s.fifo = append(s.fifo, t)
	s.bytes += n
	return *t
}

// get returns the transaction key of user.
func (s *store) get(user, key string) (Transaction, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.byKey[key]
	if !ok || t.userID != user {
		return Transaction{}, false
	}
	return *t, true
}

// byOrderNewestFirst returns user's transactions for order, newest first.
func (s *store) byOrderNewestFirst(user, order string) []Transaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	list := s.byOrder[orderKey{user, order}]
	out := make([]Transaction, len(list))
	for i, t := range list {
		out[len(list)-1-i] = *t
	}
	return out
}

// settle sets the final status and returns the updated copy.
func (s *store) settle(key, status, reason string) (Transaction, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.byKey[key]
	if !ok {
		return Transaction{}, false
	}
	t.Status, t.Reason = status, reason
	return *t, true
}

// usage returns the accounted bytes and the number of evicted transactions.
func (s *store) usage() (bytes, evicted int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes, s.evicted
}

func (s *store) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byKey)
}

// keyGen makes transaction keys yyyyMMdd:TR:xxxxxx (Asia/Seoul date, 6 hex
// digits). The suffix is a keyed bijection of a counter over 24 bits, so keys
// look random but never repeat within a run until 16,777,216 keys were made.
type keyGen struct {
	kst      *time.Location
	counter  uint32
	add, mul uint32 // mul is odd
	xorKey   uint32
}

func newKeyGen(seed uint64) *keyGen {
	return &keyGen{
		kst:    time.FixedZone("KST", 9*3600),
		add:    uint32(seed) & 0xffffff,
		mul:    (uint32(seed>>24) | 1) & 0xffffff,
		xorKey: uint32(seed>>48) & 0xffffff,
	}
}

const hexDigits = "0123456789abcdef"

// mix maps a sequence number to a 24-bit suffix; every step is a bijection
// modulo 2^24 (add, multiply by an odd number, xor-shift, xor), so the first
// 2^24 sequence numbers give distinct suffixes.
func (g *keyGen) mix(seq uint32) uint32 {
	x := (seq + g.add) & 0xffffff
	x = (x * g.mul) & 0xffffff
	x ^= x >> 12
	x = (x * 0x2f5a3b) & 0xffffff
	return x ^ g.xorKey
}

// next returns a fresh key and its sequence number; callers serialise calls.
func (g *keyGen) next(now time.Time) (string, uint64) {
	seq := g.counter
	g.counter++
	x := g.mix(seq)
	buf := make([]byte, 0, 18)
	buf = now.In(g.kst).AppendFormat(buf, "20060102")
	buf = append(buf, ":TR:"...)
	for shift := 20; shift >= 0; shift -= 4 {
		buf = append(buf, hexDigits[(x>>uint(shift))&0xf])
	}
	return string(buf), uint64(seq)
}
