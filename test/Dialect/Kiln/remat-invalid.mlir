// RUN: kiln-opt %s -split-input-file --kiln-remat=budget-bytes=4000 --verify-diagnostics

// The budget cannot be met: after recomputing t and a (remat.mlir), the
// peak is 9 KiB where t', a' and m3 are live; m2 and m3 (8 KiB) are live at
// m2's launch whatever is recomputed.
module {
  func.func private @cheap(%x: memref<1024xf32>, %o: memref<1024xf32>) attributes {kiln.num_outputs = 1 : i64} {
    return
  }
  func.func private @shrink(%x: memref<1024xf32>, %o: memref<256xf32>) attributes {kiln.num_outputs = 1 : i64} {
    return
  }
  func.func private @join(%x: memref<1024xf32>, %y: memref<256xf32>, %o: memref<1024xf32>) attributes {kiln.num_outputs = 1 : i64} {
    return
  }
  // expected-error @+1 {{memory budget of 4000 bytes (3.91 KiB) cannot be met: the smallest peak reached is 9216 bytes (9.00 KiB) (0.75x the unconstrained peak) after recomputing 2 tensors (+0 FLOPs), an arena of 9216 bytes (9.00 KiB) (--max-memory=9216 or 0.75x fits); the largest tensors live at the peak: 't' 4096 bytes (4.00 KiB), 'a' 4096 bytes (4.00 KiB), 'm3' 1024 bytes (1.00 KiB)}}
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 attributes {kiln.signature_io = "input x f32 1 1024\0Aoutput y f32 1 1024\0A"} {
    %x = kiln.input %ctx [0] : memref<1024xf32>
    %t = kiln.buffer %ctx : memref<1024xf32>
    kiln.launch %ctx @cheap(%x, %t) {kiln.launch_nodes = "t"} : memref<1024xf32>, memref<1024xf32>
    %a = kiln.buffer %ctx : memref<1024xf32>
    kiln.launch %ctx @cheap(%t, %a) {kiln.launch_nodes = "a"} : memref<1024xf32>, memref<1024xf32>
    %m1 = kiln.buffer %ctx : memref<1024xf32>
    kiln.launch %ctx @cheap(%a, %m1) {kiln.launch_nodes = "m1"} : memref<1024xf32>, memref<1024xf32>
    %m2 = kiln.buffer %ctx : memref<1024xf32>
    kiln.launch %ctx @cheap(%m1, %m2) {kiln.launch_nodes = "m2"} : memref<1024xf32>, memref<1024xf32>
    %m3 = kiln.buffer %ctx : memref<256xf32>
    kiln.launch %ctx @shrink(%m2, %m3) {kiln.launch_nodes = "m3"} : memref<1024xf32>, memref<256xf32>
    %y = kiln.output %ctx [0] : memref<1024xf32>
    kiln.launch %ctx @join(%a, %m3, %y) {kiln.launch_nodes = "join"} : memref<1024xf32>, memref<256xf32>, memref<1024xf32>
    %z = arith.constant 0 : i32
    return %z : i32
  }
}

// -----

// Kept because recomputing would not lower the peak: `a` is made from `big`
// (6 KiB), which `@opaque` writes (no kiln.num_outputs: it cannot be
// recomputed); recomputing `a` alone would keep `big` alive across the peak.
// (The best fit of these ranges needs 14 KiB for a 12 KiB peak.)
module {
  func.func private @opaque(%x: memref<1024xf32>, %o: memref<1536xf32>) {
    return
  }
  func.func private @reduce(%x: memref<1536xf32>, %o: memref<1024xf32>) attributes {kiln.num_outputs = 1 : i64} {
    return
  }
  func.func private @cheap(%x: memref<1024xf32>, %o: memref<1024xf32>) attributes {kiln.num_outputs = 1 : i64} {
    return
  }
  func.func private @join(%x: memref<1024xf32>, %y: memref<1024xf32>, %o: memref<1024xf32>) attributes {kiln.num_outputs = 1 : i64} {
    return
  }
  // expected-error @+1 {{the smallest peak reached is 12288 bytes (12.00 KiB) (1.00x the unconstrained peak) after recomputing 0 tensors (+0 FLOPs), an arena of 14336 bytes (14.00 KiB) (--max-memory=14336 or 1.17x fits); the largest tensors live at the peak: 'a' 4096 bytes (4.00 KiB), 'm1' 4096 bytes (4.00 KiB), 'm2' 4096 bytes (4.00 KiB)}}
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 attributes {kiln.signature_io = "input x f32 1 1024\0Aoutput y f32 1 1024\0A"} {
    %x = kiln.input %ctx [0] : memref<1024xf32>
    %big = kiln.buffer %ctx : memref<1536xf32>
    kiln.launch %ctx @opaque(%x, %big) {kiln.launch_nodes = "big"} : memref<1024xf32>, memref<1536xf32>
    %a = kiln.buffer %ctx : memref<1024xf32>
    kiln.launch %ctx @reduce(%big, %a) {kiln.launch_nodes = "a"} : memref<1536xf32>, memref<1024xf32>
    %m1 = kiln.buffer %ctx : memref<1024xf32>
    kiln.launch %ctx @cheap(%a, %m1) {kiln.launch_nodes = "m1"} : memref<1024xf32>, memref<1024xf32>
    %m2 = kiln.buffer %ctx : memref<1024xf32>
    kiln.launch %ctx @cheap(%m1, %m2) {kiln.launch_nodes = "m2"} : memref<1024xf32>, memref<1024xf32>
    %y = kiln.output %ctx [0] : memref<1024xf32>
    kiln.launch %ctx @join(%a, %m2, %y) {kiln.launch_nodes = "join"} : memref<1024xf32>, memref<1024xf32>, memref<1024xf32>
    %z = arith.constant 0 : i32
    return %z : i32
  }
}

// -----

// A symbolic input dim: no sizes, no budget.
module {
  // expected-error @+1 {{--max-memory needs static shapes: input 'x' dim 0 ('batch') is symbolic; fix it with --dim batch=N or --shapes x:Nx16}}
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 attributes {kiln.signature_io = "input x f32 2 ?batch 16\0Aoutput y f32 2 ?batch 16\0A"} {
    %x = kiln.input %ctx [0] : memref<?x16xf32>
    %z = arith.constant 0 : i32
    return %z : i32
  }
}

// -----

// An unnamed symbolic dim is fixed by input and axis.
module {
  // expected-error @+1 {{--max-memory needs static shapes: input 'tokens' dim 1 is symbolic; fix it with --dim tokens:1=N or --shapes tokens:1xN}}
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 attributes {kiln.signature_io = "input tokens i64 2 1 ?\0A"} {
    %x = kiln.input %ctx [0] : memref<1x?xi64>
    %z = arith.constant 0 : i32
    return %z : i32
  }
}

// -----

// Static inputs, but a tensor whose size only the run knows.
module {
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 attributes {kiln.signature_io = "input x f32 1 16\0A"} {
    %x = kiln.input %ctx [0] : memref<16xf32>
    %n = arith.constant 4 : index
    // expected-error @+1 {{--max-memory needs static shapes: this tensor's size 'memref<?xf32>' is only known when the model runs}}
    %b = kiln.buffer %ctx (%n) : memref<?xf32>
    %z = arith.constant 0 : i32
    return %z : i32
  }
}
