// The seed's job in Go, the baseline of the coroutines-versus-threads table: `seed N` starts N
// goroutines that each sleep ten times for 1 ms; `burst N` starts N goroutines that each count
// once. Run with GOMAXPROCS=1 beside one loop. One run per process, from a fresh start, as
// each of our cells is measured: prints GOMAXPROCS and nanoseconds (the whole job for `seed`,
// per goroutine for `burst`).
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

func seed(tasks int) {
	var group sync.WaitGroup
	group.Add(tasks)
	for i := 0; i < tasks; i++ {
		go func() {
			for wait := 0; wait < 10; wait++ {
				time.Sleep(time.Millisecond)
			}
			group.Done()
		}()
	}
	group.Wait()
}

func burst(tasks int) {
	var group sync.WaitGroup
	var count int64
	group.Add(tasks)
	for i := 0; i < tasks; i++ {
		go func() {
			atomic.AddInt64(&count, 1)
			group.Done()
		}()
	}
	group.Wait()
	if count != int64(tasks) {
		os.Exit(1)
	}
}

func main() {
	if len(os.Args) != 3 {
		os.Exit(2)
	}
	tasks, err := strconv.Atoi(os.Args[2])
	if err != nil || tasks <= 0 {
		os.Exit(2)
	}
	start := time.Now()
	switch os.Args[1] {
	case "seed":
		seed(tasks)
		tasks = 1
	case "burst":
		burst(tasks)
	default:
		os.Exit(2)
	}
	took := time.Since(start)
	fmt.Printf("%d %d\n", runtime.GOMAXPROCS(0), took.Nanoseconds()/int64(tasks))
}
