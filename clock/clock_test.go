package clock

import (
	"testing"
	"time"
)

func TestFakeWakesWaitersInTimeOrderWhenTheirTimeComes(t *testing.T) {
	start := time.Date(2026, 12, 1, 4, 30, 0, 0, time.UTC)
	f := NewFake(start)
	late, early := f.After(2*time.Minute), f.After(time.Minute)
	if n := f.Waiting(); n != 2 {
		t.Fatalf("%d waiting, want 2", n)
	}
	f.Advance(59 * time.Second)
	select {
	case <-early:
		t.Fatal("woken a second early")
	default:
	}
	f.Advance(time.Second)
	if at := <-early; !at.Equal(start.Add(time.Minute)) {
		t.Errorf("woken with %s, want %s", at, start.Add(time.Minute))
	}
	select {
	case <-late:
		t.Fatal("the later waiter woke too")
	default:
	}
	f.Advance(time.Hour)
	<-late
	if n := f.Waiting(); n != 0 {
		t.Errorf("%d still waiting", n)
	}
	if got := f.Now(); !got.Equal(start.Add(time.Hour + time.Minute)) {
		t.Errorf("Now = %s", got)
	}
	select {
	case <-f.After(0):
	default:
		t.Error("After(0) did not fire at once")
	}
}

func TestWaitForSeesAWaiterThatComesLater(t *testing.T) {
	f := NewFake(time.Unix(0, 0))
	if f.WaitFor(1, 10*time.Millisecond) {
		t.Fatal("WaitFor saw a waiter where there is none")
	}
	go f.After(time.Second)
	if !f.WaitFor(1, 10*time.Second) {
		t.Fatal("WaitFor did not see the waiter")
	}
}
