// Two goroutines passing a value back and forth over unbuffered channels, the baseline of
// `bench group`'s ping-pong. Prints GOMAXPROCS and the best of five runs, nanoseconds per round
// trip.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"
)

func main() {
	count, _ := strconv.Atoi(os.Args[1])
	best := time.Duration(1 << 62)
	for r := 0; r < 5; r++ {
		pings := make(chan int)
		pongs := make(chan int)
		go func() {
			for value := range pings {
				pongs <- value
			}
		}()
		start := time.Now()
		for i := 0; i < count; i++ {
			pings <- i
			if <-pongs != i {
				os.Exit(1)
			}
		}
		took := time.Since(start)
		close(pings)
		if took < best {
			best = took
		}
	}
	fmt.Printf("%d %.1f\n", runtime.GOMAXPROCS(0), float64(best.Nanoseconds())/float64(count))
}
