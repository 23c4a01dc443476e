// Go's echo server, the echo benchmark's baseline: `echo [port]` (0 or none: the system
// picks), prints `port=N` once listening, runs until killed. One goroutine per connection
// copies what it reads back to the connection; the benchmark runs it with GOMAXPROCS=1.
package main

import (
	"fmt"
	"net"
	"os"
)

func serve(connection net.Conn) {
	defer connection.Close()
	buffer := make([]byte, 4096)
	for {
		count, err := connection.Read(buffer)
		if err != nil {
			return
		}
		if _, err := connection.Write(buffer[:count]); err != nil {
			return
		}
	}
}

func main() {
	port := "0"
	if len(os.Args) > 1 {
		port = os.Args[1]
	}
	listener, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(1)
	}
	fmt.Printf("port=%d\n", listener.Addr().(*net.TCPAddr).Port)
	for {
		connection, err := listener.Accept()
		if err != nil {
			continue
		}
		go serve(connection)
	}
}
