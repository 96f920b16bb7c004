// Command wqbench times the real client-go workqueue on the cycles that
// benchmarks/workqueue.py times on refimpl, and prints one JSON object per line:
//
//	{"name": "queue", "ns_per_cycle": 113.2}
//	{"name": "throughput", "workers": 2, "items_per_second": 4.1e6}
//
// The Python script builds and runs it; it is a script's helper, not a test.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// keys are the 100 string items every single-threaded cycle cycles through.
var keys = func() []string {
	out := make([]string, 100)
	for i := range out {
		out[i] = "key-" + strconv.Itoa(i)
	}
	return out
}()

func emit(record map[string]any) {
	line, err := json.Marshal(record)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(line))
}

// useCPU makes bestOf count the process's CPU time (user + system, every thread)
// instead of wall time: steadier on a machine shared with other work.
var useCPU bool

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// bestOf runs fn repeat times and returns the shortest time (wall, or CPU with -cpu).
func bestOf(repeat int, fn func()) time.Duration {
	best := time.Duration(1<<63 - 1)
	for r := 0; r < repeat; r++ {
		start, cpu := time.Now(), cpuTime()
		fn()
		d := time.Since(start)
		if useCPU {
			d = cpuTime() - cpu
		}
		if d < best {
			best = d
		}
	}
	return best
}

// queueCycles: add -> get -> done on a plain queue, one goroutine.
func queueCycles(cycles int) func() {
	return func() {
		q := workqueue.NewTyped[string]()
		defer q.ShutDown()
		for i := 0; i < cycles; i++ {
			q.Add(keys[i%len(keys)])
			item, _ := q.Get()
			q.Done(item)
		}
	}
}

// rateLimitedCycles: AddRateLimited then Forget, on the default controller limiter.
func rateLimitedCycles(cycles int) func() {
	return func() {
		q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
		defer q.ShutDown()
		for i := 0; i < cycles; i++ {
			key := keys[i%len(keys)]
			q.AddRateLimited(key)
			q.Forget(key)
		}
	}
}

// throughput: one producer adds items distinct ints, workers Get/Done until shutdown.
func throughput(workers, items int) float64 {
	q := workqueue.NewTyped[int]()
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				item, shutdown := q.Get()
				if shutdown {
					return
				}
				q.Done(item)
			}
		}()
	}
	for i := 0; i < items; i++ {
		q.Add(i)
	}
	q.ShutDown()
	wg.Wait()
	return float64(items) / time.Since(start).Seconds()
}

func main() {
	cycles := flag.Int("cycles", 200000, "cycles per timed run")
	repeat := flag.Int("repeat", 5, "timed runs; the best counts")
	flag.BoolVar(&useCPU, "cpu", false, "per-cycle figures in process CPU time, not wall time")
	flag.Parse()
	if *cycles <= 0 || *repeat <= 0 {
		fmt.Fprintln(os.Stderr, "cycles and repeat must be > 0")
		os.Exit(2)
	}
	n := *cycles
	emit(map[string]any{"name": "queue", "ns_per_cycle": float64(bestOf(*repeat, queueCycles(n)).Nanoseconds()) / float64(n)})
	emit(map[string]any{"name": "rate_limited", "ns_per_cycle": float64(bestOf(*repeat, rateLimitedCycles(n)).Nanoseconds()) / float64(n)})
	for _, workers := range []int{1, 2, 4} {
		best := 0.0
		for r := 0; r < max(1, *repeat/2); r++ {
			best = max(best, throughput(workers, n))
		}
		emit(map[string]any{"name": "throughput", "workers": workers, "items_per_second": best})
	}
}
