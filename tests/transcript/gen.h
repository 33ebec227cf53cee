/* The programs a transcript is made of. */
#ifndef EVX_TRANSCRIPT_GEN_H
#define EVX_TRANSCRIPT_GEN_H
#include "prog.h"
void prog_setup(struct prog *p);
void prog_cleanup(struct prog *p);
void prog_random(struct prog *p, int len);
/* The probe program (probe.c). */
void prog_probe(struct prog *p);
/* The capture-legality programs: entry x mode x place. */
int legality_count(int generator);
void prog_legality(struct prog *p, int k);
#endif
