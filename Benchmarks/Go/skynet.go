// Skynet: a tree of 1 000 000 goroutines, each summing its ten children's numbers, the
// baseline of `bench group`. Prints GOMAXPROCS and the best of five runs in nanoseconds.
package main

import (
	"fmt"
	"os"
	"runtime"
	"time"
)

func skynet(c chan int, num int, size int, div int) {
	if size == 1 {
		c <- num
		return
	}
	rc := make(chan int)
	var sum int
	for i := 0; i < div; i++ {
		subNum := num + i*(size/div)
		go skynet(rc, subNum, size/div, div)
	}
	for i := 0; i < div; i++ {
		sum += <-rc
	}
	c <- sum
}

func main() {
	best := time.Duration(1 << 62)
	for r := 0; r < 5; r++ {
		c := make(chan int)
		start := time.Now()
		go skynet(c, 0, 1000000, 10)
		result := <-c
		took := time.Since(start)
		if result != 499999500000 {
			os.Exit(1)
		}
		if took < best {
			best = took
		}
	}
	fmt.Printf("%d %d\n", runtime.GOMAXPROCS(0), best.Nanoseconds())
}
