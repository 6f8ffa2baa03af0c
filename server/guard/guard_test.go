package guard

import (
	"testing"
	"time"
)

// clock is a time the test moves.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

func TestLimiterRefillsOnItsClock(t *testing.T) {
	clk := &clock{now: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	l := NewLimiter(1, clk.Now) // a burst of 2
	for i := range 2 {
		if ok, _, _ := l.allow("a", l.now()); !ok {
			t.Fatalf("request %d of the burst refused", i+1)
		}
	}
	ok, _, wait := l.allow("a", l.now())
	if ok || wait <= 0 || wait > time.Second {
		t.Fatalf("third request: allowed %v, wait %v; want refused, within 1 s", ok, wait)
	}
	if ok, _, _ := l.allow("b", l.now()); !ok {
		t.Error("another client was refused for the first one's requests")
	}
	clk.now = clk.now.Add(wait)
	if ok, _, _ := l.allow("a", l.now()); !ok {
		t.Errorf("refused once the wait it was told (%v) had passed", wait)
	}
}

func TestCostLimiterChargesAndRefills(t *testing.T) {
	clk := &clock{now: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	l := NewCostLimiter(RateLimit{CostPerSecond: 0.1, CostBurst: time.Second}, clk.Now)
	keys := []string{"ip 192.0.2.1"}
	spent := 0
	for ; spent < 10; spent++ {
		release, _, ok := l.admit(keys, costExpensive, l.now())
		if !ok {
			break
		}
		release()
	}
	if spent != 2 { // 1 s of burst: two requests of 0.5 s, the second taking it to 0
		t.Fatalf("admitted %d expensive requests on a 1 s burst, want 2", spent)
	}
	_, wait, ok := l.admit(keys, costCheap, l.now())
	if ok || wait <= 0 {
		t.Fatalf("a client with nothing left: admitted %v, wait %v", ok, wait)
	}
	clk.now = clk.now.Add(wait)
	if _, _, ok := l.admit(keys, costCheap, l.now()); !ok {
		t.Errorf("refused once the wait it was told (%v) had passed", wait)
	}
	l.charge("key k", 5, l.now())
	if _, wait, ok := l.admit([]string{"ip 192.0.2.2", "key k"}, costCheap, l.now()); ok || wait < 40*time.Second {
		t.Errorf("a key charged 5 s for a rebuild it caused: admitted %v, wait %v; want refused for about 40 s", ok, wait)
	}
}
