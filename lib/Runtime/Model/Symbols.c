/*===- Symbols.c - Names of CPU kernels for profiles ----------------------===*
 *
 * kiln_rt_launch_cpu gets a CPU kernel's function, not its name. A model
 * without `launch` records (docs/runtime.md, "Profiling") names it from
 * the symbol table of the shared object that holds it: model.so keeps its
 * .symtab (kilnc does not strip it) though it exports only the API table,
 * so dladdr (which reads .dynsym) does not know the kernels. The file is
 * mapped read-only, its section headers bounds-checked, and unmapped again.
 *===----------------------------------------------------------------------===*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr1 */
#endif
#include "ModelRuntime.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Whether [offset, offset + size) lies within a file of `file_size`. */
static int in_file(uint64_t offset, uint64_t size, size_t file_size) {
  return offset <= file_size && size <= file_size - offset;
}

/* Fills out[i] for the symbols of section `symtab` (linked to its string
 * table) whose address is addrs[i] - bias. */
static void match_symbols(const unsigned char *map, size_t size,
                          const Elf64_Shdr *sections, size_t num_sections,
                          const Elf64_Shdr *symtab, uintptr_t bias,
                          void *const *addrs, size_t n, char **out) {
  if (symtab->sh_link >= num_sections ||
      symtab->sh_entsize != sizeof(Elf64_Sym) ||
      !in_file(symtab->sh_offset, symtab->sh_size, size))
    return;
  const Elf64_Shdr *strtab = &sections[symtab->sh_link];
  if (!in_file(strtab->sh_offset, strtab->sh_size, size))
    return;
  const char *strings = (const char *)map + strtab->sh_offset;
  const Elf64_Sym *syms = (const Elf64_Sym *)(map + symtab->sh_offset);
  size_t count = symtab->sh_size / sizeof(Elf64_Sym);
  for (size_t s = 0; s < count; ++s) {
    const Elf64_Sym *sym = &syms[s];
    if (ELF64_ST_TYPE(sym->st_info) != STT_FUNC || sym->st_value == 0 ||
        sym->st_name >= strtab->sh_size)
      continue;
    for (size_t i = 0; i < n; ++i) {
      if (out[i] || (uintptr_t)addrs[i] != bias + sym->st_value)
        continue;
      const char *name = strings + sym->st_name;
      size_t len = strnlen(name, strtab->sh_size - sym->st_name);
      out[i] = (char *)malloc(len + 1);
      if (out[i]) {
        memcpy(out[i], name, len);
        out[i][len] = '\0';
      }
    }
  }
}

void kiln_rt_symbol_names(void *const *addrs, size_t n, char **out) {
  for (size_t i = 0; i < n; ++i)
    out[i] = NULL;
  if (n == 0)
    return;
  Dl_info info;
  struct link_map *lm = NULL;
  if (!dladdr1(addrs[0], &info, (void **)&lm, RTLD_DL_LINKMAP) ||
      !info.dli_fname || !lm)
    return;
  int fd = open(info.dli_fname, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return;
  struct stat st;
  void *mapped = MAP_FAILED;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
      (size_t)st.st_size >= sizeof(Elf64_Ehdr))
    mapped = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (mapped == MAP_FAILED)
    return;
  const unsigned char *map = (const unsigned char *)mapped;
  size_t size = (size_t)st.st_size;
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)map;
  if (memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 &&
      eh->e_ident[EI_CLASS] == ELFCLASS64 &&
      eh->e_shentsize == sizeof(Elf64_Shdr) &&
      in_file(eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr), size)) {
    const Elf64_Shdr *sections = (const Elf64_Shdr *)(map + eh->e_shoff);
    /* .symtab has every function; .dynsym (a stripped file) the exported
     * ones. */
    for (int pass = 0; pass < 2; ++pass)
      for (size_t s = 0; s < eh->e_shnum; ++s)
        if (sections[s].sh_type == (pass == 0 ? SHT_SYMTAB : SHT_DYNSYM))
          match_symbols(map, size, sections, eh->e_shnum, &sections[s],
                        (uintptr_t)lm->l_addr, addrs, n, out);
  }
  munmap(mapped, size);
}
