# Tier 0 controls: the op loops of floor_cas_store and floor_fetch_add, in one assembly source
# that both bench programs assemble into themselves (Zig: build.zig, `addAssemblyFile` for the
# bench module, declared in runtime/bench/sync_tiers.zig; Rust: rust_bench/src/sync_tiers.rs,
# global_asm! with include_str!). The two
# programs therefore run the same instructions at the same alignment, called the same way
# (System V C ABI, through a direct call from the timed region); only the caller around the
# call is compiled by each language, and that is outside the op loop.
#
# Syntax: AT&T (GNU as). Both sides hand the text to LLVM's integrated assembler unchanged.
# The symbols are hidden: they are not exported from either program.
# Rules for editing: no braces anywhere (Rust's global_asm! reads them as operands); local
# labels are numbers other than 0 and 1 (Rust warns on labels made of those digits).
#
# Alignment: each function starts on a 64-byte boundary and each loop head is aligned to 64
# bytes too, so the loop body never straddles a cache line or a 32-byte fetch block
# differently in the two programs. Padding is never executed (it follows a `retq`) and is
# filled with int3 (0xcc) explicitly: left to choose, the two assemblers pick different NOP
# encodings (Zig's 11-byte, rustc's 15-byte ones), and the bytes would differ.

    .pushsection .text.ampere_bench_controls,"ax",@progbits

# u64 ampere_bench_floor_cas_store(u32 *word, u64 ops)
#
# One op: a 32-bit compare-and-swap 0 -> 1 (lock cmpxchg: acquire on success and more), then a
# plain 32-bit store of 0 (release on x86-64). Returns how many compare-and-swaps succeeded
# (ops when *word was 0 on entry), so a loop that did not run fails the caller's check.
# Clobbers rax, rcx, rdx, rsi, r8 (all caller-saved).
    .globl  ampere_bench_floor_cas_store
    .hidden ampere_bench_floor_cas_store
    .type   ampere_bench_floor_cas_store,@function
    .p2align 6, 0xcc
ampere_bench_floor_cas_store:
    xorl    %r8d, %r8d
    movl    $1, %ecx
    testq   %rsi, %rsi
    jne     2f
    movq    %r8, %rax
    retq
    .p2align 6, 0xcc
2:
    xorl    %eax, %eax
    lock cmpxchgl %ecx, (%rdi)
    sete    %dl
    movzbl  %dl, %edx
    addq    %rdx, %r8
    movl    $0, (%rdi)
    decq    %rsi
    jne     2b
    movq    %r8, %rax
    retq
    .size   ampere_bench_floor_cas_store, .-ampere_bench_floor_cas_store

# void ampere_bench_floor_fetch_add(u64 *counter, u64 ops)
#
# One op: a 64-bit fetch-add of 1 whose result is unused (lock inc: acq_rel and more; what both
# compilers emit for fetch_add(1) with the result discarded). Clobbers rsi.
    .globl  ampere_bench_floor_fetch_add
    .hidden ampere_bench_floor_fetch_add
    .type   ampere_bench_floor_fetch_add,@function
    .p2align 6, 0xcc
ampere_bench_floor_fetch_add:
    testq   %rsi, %rsi
    jne     2f
    retq
    .p2align 6, 0xcc
2:
    lock incq (%rdi)
    decq    %rsi
    jne     2b
    retq
    .size   ampere_bench_floor_fetch_add, .-ampere_bench_floor_fetch_add

    .popsection

# Assembled on its own (Zig), the object says it needs no executable stack.
    .pushsection .note.GNU-stack,"",@progbits
    .popsection
