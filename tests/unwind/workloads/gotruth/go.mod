module gotruth

go 1.19
