// Fake time and quiescence for the informer: each informer instance lives in its own
// testing/synctest "bubble".
//
// client-go v0.37.2 lets no caller give its shared informer a clock:
// NewSharedIndexInformerWithOptions stores clock.RealClock in the unexported
// sharedIndexInformer.clock and sharedProcessor.clock, RunWithContext copies it into
// the unexported controller.clock, and that becomes ReflectorOptions.Clock, the clock
// of the reflector's backoff (wait.Backoff.DelayWithReset) and resync timer. The
// processorListener sleeps with time.Sleep after a recovered handler panic. So every
// timer the informer has reads the time package. Inside a synctest bubble the time
// package is a fake clock that moves only when every goroutine of the bubble is
// durably blocked; the bubble's root goroutine here runs the harness's requests and
// is never durably blocked between requests (it waits on a channel made outside the
// bubble), so bubble time moves only during an "advance", where the root sleeps for
// exactly the requested duration. Nothing inside client-go is changed or replaced.
//
// synctest.Wait is the quiescence barrier: it returns when every other goroutine of
// the bubble (reflector, FIFO pop loop, processor listeners, the scripted list/watch
// calls) is durably blocked: on a channel or sync.Cond of the bubble, in a
// time.Sleep or on a timer. Then the request's effects have all happened.
//
// Randomness: client-go jitters the reflector's backoff (wait.Jitter through the
// unexported wait.jitterRand, which is math/rand's global Float64) and its watch
// timeouts. To keep answers reproducible the adapter seeds math/rand's global source
// at every informer create (rand.Seed, which Go 1.24+ ignores unless the binary sets
// GODEBUG randseednop=0: the go:debug line above). Same requests, same jitter.
//
// synctest.Test needs a *testing.T. A normal binary gets one from testing.MainStart
// (exported for generated test mains; its deps are stubbed below): one host test that
// never ends hands out its T, and each informer runs as synctest.Test(hostT, ...) on a
// goroutine of its own. The host test never finishes, so the testing package prints
// nothing on stdout (it would only report a failed or finished test).
//
//go:debug randseednop=0
package main

import (
	"errors"
	"flag"
	"io"
	"reflect"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// parked is never closed; made outside every bubble.
var parked = make(chan struct{})

var bubbleHost struct {
	once sync.Once
	t    *testing.T
}

func hostT() *testing.T {
	bubbleHost.once.Do(func() {
		if !flag.Parsed() {
			_ = flag.CommandLine.Parse(nil) // m.Run would parse the adapter's argv
		}
		got := make(chan *testing.T)
		m := testing.MainStart(hostDeps{}, []testing.InternalTest{{Name: "informer-bubbles",
			F: func(t *testing.T) {
				got <- t
				<-parked // the host test never ends; the process exits at EOF
			}}}, nil, nil, nil)
		go m.Run()
		bubbleHost.t = <-got
	})
	return bubbleHost.t
}

// hostDeps is the minimum testing.MainStart needs (what a generated test main gets
// from testing/internal/testdeps): no profiles, no fuzzing, no coverage.
type hostDeps struct{}

func (hostDeps) ImportPath() string                          { return "" }
func (hostDeps) ModulePath() string                          { return "" }
func (hostDeps) MatchString(pat, str string) (bool, error)   { return true, nil }
func (hostDeps) SetPanicOnExit0(bool)                        {}
func (hostDeps) StartCPUProfile(io.Writer) error             { return nil }
func (hostDeps) StopCPUProfile()                             {}
func (hostDeps) StartTestLog(io.Writer)                      {}
func (hostDeps) StopTestLog() error                          { return nil }
func (hostDeps) WriteProfileTo(string, io.Writer, int) error { return nil }
func (hostDeps) CoordinateFuzzing(time.Duration, int64, time.Duration, int64, int,
	[]fuzzEntry, []reflect.Type, string, string) error {
	return errors.New("no fuzzing")
}
func (hostDeps) RunFuzzWorker(func(fuzzEntry) error) error { return errors.New("no fuzzing") }
func (hostDeps) ReadCorpus(string, []reflect.Type) ([]fuzzEntry, error) {
	return nil, errors.New("no fuzzing")
}
func (hostDeps) CheckCorpus([]any, []reflect.Type) error { return nil }
func (hostDeps) ResetCoverage()                          {}
func (hostDeps) SnapshotCoverage()                       {}
func (hostDeps) InitRuntimeCoverage() (string, func(string, string) (string, error), func() float64) {
	return "", nil, nil
}

// fuzzEntry is the shape of the testing package's corpusEntry (a type alias there).
type fuzzEntry = struct {
	Parent     string
	Path       string
	Data       []byte
	Values     []any
	Generation int
	IsSeed     bool
}

// bubble runs closures on the root goroutine of one synctest bubble (an informer's, or
// a work queue's ShutDownWithDrain: workqueue.go, drainer).
type bubble struct {
	work chan func() // made outside the bubble: waiting on it is not durable
	end  chan bool   // at close: true if the bubble may end (its goroutines are done)
}

// barrierTimeout bounds one request's wait for quiescence (real time).
const bubbleTimeout = 4 * time.Second

func newBubble() *bubble {
	b := &bubble{work: make(chan func()), end: make(chan bool, 1)}
	t := hostT()
	go synctest.Test(t, func(*testing.T) {
		for f := range b.work {
			f()
		}
		if <-b.end {
			// The informer was stopped and its Run returned: every goroutine it
			// started has ended or is ending, so the bubble can end (synctest.Test
			// waits for them) and its memory be freed.
			return
		}
		// Not known to be finished: stay parked on a channel made outside the bubble
		// (not durably blocked), so that a goroutine client-go leaves behind can never
		// make synctest report a deadlock; the bubble's time stays frozen.
		<-parked
	})
	return b
}

// do runs f on the bubble's root, then waits until the bubble is quiescent, then
// runs after (which reads the state to answer). Bounded in real time: internal error.
func (b *bubble) do(f func() error, after func() (any, error)) (any, error) {
	type answer struct {
		v   any
		err error
	}
	reply := make(chan answer, 1)
	job := func() {
		if err := f(); err != nil {
			synctest.Wait()
			reply <- answer{nil, err}
			return
		}
		synctest.Wait()
		v, err := after()
		reply <- answer{v, err}
	}
	timer := time.NewTimer(bubbleTimeout)
	defer timer.Stop()
	select {
	case b.work <- job:
	case <-timer.C:
		return nil, refuse("internal", "the bubble is busy (a previous request never became quiescent)")
	}
	select {
	case a := <-reply:
		return a.v, a.err
	case <-timer.C:
		return nil, refuse("internal", "the bubble did not become quiescent within %v", bubbleTimeout)
	}
}

func (b *bubble) close(finished bool) {
	b.end <- finished
	close(b.work)
}
