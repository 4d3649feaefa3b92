/*
 * lazaret.pml -- Promela model of the Lazaret Domain protocol.
 *
 * One Domain (one profile + workspace pair), followed through up to NCAND
 * coordinator processes (so up to NCAND generations), NCLIENT lazaretctl
 * clients with one session each, and up to MAXREQ escalation requests
 * written by the untrusted sandbox.  Up to NFAULT injected events kill a
 * coordinator, the Runtime Supervisor, the runsc client, slirp4netns, the
 * workspace view (lazaret-view) or a client, cut the coordinator off the
 * user bus, or (once) send Stop() or SIGTERM to the owner of a running
 * Domain.  With -DHOSTRULES the profile has host rules (§4.5 "Egress by
 * name"): the egress helper binds names to synthetic addresses, the agent
 * inside the sandbox resolves and connects through it, the attestation
 * runs the four name canaries before "attested", and the developer may
 * allow a denied name live.  run-model.sh checks
 * several bounded configurations of these constants (spec/README.md).
 *
 * Roles (spec/lazaret.md §4.1) and the processes that model them:
 *   Coordinator   lazaret-coordinator, main process of lazaret@<id>.service
 *                 (the Manager: lock, bus name, sessions, children, mailbox)
 *   Supervisor    lazaret-supervisor, the coordinator's child
 *   runsc, slirp4netns, lazaret-view   state variables owned by the
 *                 Supervisor's steps; they die only through Faults (the view
 *                 also with the supervisor, PR_SET_PDEATHSIG)
 *   Client        lazaretctl launch
 *   Escalator     lazaret-escalate and the agent inside the sandbox
 *   Agent         with -DHOSTRULES: the agent's DNS questions and
 *                 connections, each answered by lazaret-egress in one step
 *   UserManager   systemd --user (socket activation, the sandbox scope
 *                 bound to the service) and dbus-daemon
 *   Faults        process deaths and bus loss, and Stop() / SIGTERM
 *
 * Section numbers (§) refer to spec/lazaret.md.  The invariants of §7 are
 * checked by the Invariants and Quiescence processes (safety run) and by
 * the ltl formulas at the end (liveness run, -DLIVENESS).
 *
 * Deliberately broken variants: compile with -DMUTANT_<name>.  Every
 * mutation point is marked MUTANT and listed in spec/mutants/mutants.list.
 *
 * Modelling conventions
 *  - One atomic block = one sd-event dispatch in the coordinator, or one
 *    run-to-completion step of another role.  The coordinator's handlers
 *    never interleave with each other (sd-event is single-threaded), but
 *    every other role runs concurrently with them.
 *  - A process death is a kernel fact that happens at once (state
 *    P_EXITED); the coordinator learns of it later, when its pidfd or
 *    scope-state handler runs.  Invariants allow exactly that gap.
 *  - Keys: the Session Anchor key of client c is the number c; BOGUS_KEY
 *    is a key no client owns.  "Signed by k" means rq_key == k.
 */

#define NCLIENT 2        /* lazaretctl processes, one session each      */
#define NREQ    2        /* request slots in the mailbox                */
#ifndef NCAND
#define NCAND   2        /* coordinator processes that may ever start   */
#endif
#ifndef MAXREQ
#define MAXREQ  2        /* escalation requests the sandbox may write   */
#endif
#ifndef NFAULT
#define NFAULT  1        /* injected events per run (see Faults)        */
#endif

/* Domain phase: the Domain Store record plus the leader's view (§5.2). */
#define D_ABSENT   0     /* no generation, nothing to clean up          */
#define D_STARTING 1     /* generation begun, not yet published         */
#define D_RUNNING  2     /* published: sessions are admitted            */
#define D_STOPPING 3     /* refcount reached zero: ordered teardown     */
#define D_FAILED   4     /* Domain failure: ordered recovery pending    */

/* Supervisor, runsc client, slirp4netns and view process state (§5.7). */
#define P_NONE   0       /* no process (never started, or reaped)       */
#define P_ALIVE  1
#define P_EXITED 2       /* dead; the coordinator has not handled it    */

/* lazaretctl client state as the Domain sees it (§5.4). */
#define CL_IDLE    0     /* not yet connected                           */
#define CL_WAITING 1     /* connected to lazaret@<id>.socket, waiting   */
#define CL_ACTIVE  2     /* OpenSession succeeded: session registered   */
#define CL_GONE    3     /* session over (either side closed it)        */

/* Escalation request state (§5.6).  States >= RQ_ACCEPTED were routed. */
#define RQ_NONE      0
#define RQ_WRITTEN   1   /* renamed into the mailbox's request directory */
#define RQ_DISCARDED 2   /* not accepted: bad signature, stale, failed  */
#define RQ_ACCEPTED  3   /* verified; prompt routed to the session       */
#define RQ_RUNNING   4   /* approved; host command running               */
#define RQ_DONE      5   /* exactly one result file delivered            */
#define RQ_DROPPED   6   /* its session disconnected before a result     */

#define V_NONE    0
#define V_APPROVE 1      /* [A] approve, or [E] edit then approve        */
#define V_DENY    2      /* [D] deny                                     */

#define BOGUS_KEY 7

/* Egress by name (§4.5), -DHOSTRULES only.  The names the model knows, and
 * their synthetic addresses: the helper gives each name one address of its
 * pool for its life, handed out in order; the model gives name n the
 * address n (which address a name gets is not what the invariants read).
 * A_UNBOUND stands for every address no name resolved to: the pool's last,
 * which the direct canary uses, and every real address. */
#define N_OK        1    /* a name the profile's host rules allow         */
#define N_DENIED    2    /* a name no rule allows, unless the developer allows it live */
#define N_CANARY    3    /* allowed.canary.lazaret.invalid: --canary-socket, held apart from the rules */
#define N_CDENIED   4    /* denied.canary.lazaret.invalid: no rule may name it */
#define A_UNBOUND   5
#define BIT(n)      (1 << (n))

/* The helper's live rule for N_DENIED (add_host), by scope. */
#define L_NONE      0
#define L_ONCE      1    /* lapses (its TTL after one use, or unused)     */
#define L_DOMAIN    2    /* until the helper exits; a kept rule is sent so */

#define BY_DEVELOPER 1   /* the coordinator, on the developer's decision  */
#define BY_SANDBOX   2   /* anything the sandbox chose                     */

/* The name canaries (§4.5 "Proven from inside"), one bit each. */
#define C_ALLOWED   1    /* the allowed name resolves, its ClientHello reaches the responder */
#define C_DENIED    2    /* the denied name is NXDOMAIN                    */
#define C_DIRECT    4    /* a connection to A_UNBOUND is reset             */
#define C_HELLO     8    /* a ClientHello naming N_CDENIED on N_CANARY's address is refused */
#define C_ALL       15

#define MAXALLOW    1    /* the developer's allows per run                */
#define OTHER_DIGEST 255 /* a rule set no policy digest covers            */

/* ------------------------------------------------------------------ */
/* Shared state                                                        */
/* ------------------------------------------------------------------ */

/* Leader election (§5.1): kernel flock and the user bus. */
byte flock_owner;              /* coordinator holding LOCK_EX, 0 = none  */
byte bus_owner;                /* owner of org.lazaret.Domain.d<id>      */
bool bus_conn[NCAND+1];        /* coordinator's bus connection is open   */
bool coord_alive[NCAND+1];
bool is_owner[NCAND+1];        /* holds flock and name, acts as leader   */
bool unit_inst[NCAND+1];       /* started by systemd as lazaret@<id>     */
byte nowners;                  /* number of coordinators with is_owner   */
byte ncand;                    /* coordinator processes started so far  */
bool unit_active;              /* lazaret@<id>.service has a main PID    */
bool stray_used;               /* the one out-of-band coordinator start  */
byte stop_req;                 /* coordinator sent Stop() or SIGTERM     */

/* Domain record and leader memory (§5.2, §5.3). */
byte phase;                    /* D_*                                    */
bool dirty;                    /* Domain Store: resources may exist      */
byte gen;                      /* current Domain generation              */
bool sandbox_ready;            /* supervisor reported runsc started      */
byte attested;                 /* generation the canary attested         */
bool net_ready;                /* coordinator's network readiness        */
bool published;                /* object exported, State = "running"     */
bool sup_stop;                 /* STOP sent on the supervisor channel    */

/* Physical resources, tagged with the generation that created them. */
byte sup;      byte sup_gen;   /* Runtime Supervisor process             */
byte runsc;                    /* attached `runsc run` client process    */
byte sandbox_gen;              /* runsc container + its scope exist      */
byte sandbox_coord;            /* coordinator whose service the scope is
                                  bound to (BindsTo=, C6)                */
byte helper;   byte helper_gen;/* slirp4netns process / its scope+netns  */
byte view;     byte view_gen;  /* lazaret-view process / the generation
                                  whose view was started and not yet
                                  cleaned up (its FUSE mount, §4.6)      */
byte anchor_gen;               /* State Anchor overlay is mounted        */
byte lease_gen;                /* Storage Catalog: generation whose lease
                                  holds the prepared lower (0: none)     */
bool lower_gone;               /* `state gc` removed the prepared lower  */
byte gc_runs;                  /* `lazaretctl state gc` runs (a Faults event) */
bool reset_under_mount;        /* `lazaretctl state reset` emptied a layer a mounted overlay used */

/* Clients and the session registry (§5.4). Index = session ID. */
byte cl[NCLIENT+1];
bool cl_alive[NCLIENT+1];      /* client process runs, bus peer present  */
byte sess_client[NCLIENT+1];   /* session ID -> client (bus unique name) */
byte sess_key[NCLIENT+1];      /* session ID -> Session Anchor key       */

/* Escalation Mailbox (§5.6). Index = request number. */
byte nreq;
byte rq[NREQ+1];
byte rq_claim[NREQ+1];         /* session ID written in the request      */
byte rq_key[NREQ+1];           /* key that signed it                     */
byte rq_route[NREQ+1];         /* client the prompt went to              */
byte rq_verdict[NREQ+1];       /* client's answer, not yet handled       */
byte rq_results[NREQ+1];       /* result files delivered                 */
bool rq_cancel[NREQ+1];        /* cancel file written, not yet handled   */
bool host_cmd[NREQ+1];         /* approved host command is running       */
byte rq_copy_of[NREQ+1];       /* a replay: the request whose bytes it copies (0: none) */
byte rq_cred_gen[NREQ+1];      /* generation whose Trust Anchor issued the credential it carries */
byte rq_accept_gen[NREQ+1];    /* generation that accepted it (0: never)  */
bool rq_forged[NREQ+1];        /* its verdict came from a forged notification action */
/* The prompt on the session's terminal (§5.6 "The prompt").  The sandbox
 * writes to that terminal whenever no prompt is up, so the model takes
 * the worst case: before every drawing the terminal is in a state the
 * sandbox chose.  Drawing resets it first (DRAW_PROMPT), so the human
 * reads the real command; keys count only once the prompt was written
 * whole and a quiet period passed.  Both steps leave no trace in a state
 * of the correct protocol (these flags stay false), so they cost the
 * search nothing; each mutant that skips one sets them.  */
bool pr_hidden[NREQ+1];        /* drawn into the sandbox's terminal state: what the human reads may be forged */
bool rq_unseen[NREQ+1];        /* approved on a terminal by a key typed before, or without, reading it */
bool rq_was_accepted[NREQ+1];  /* ever accepted (for ReplayRefused)      */
bool id_seen[NREQ+1];          /* request IDs the coordinator accepted   */
byte newest[NCLIENT+1];        /* client -> its session's newest accepted request: the one result file is its */
bool stale_result;             /* a result was written over the file of a later request of its session */
byte first_claim;              /* request 1 as written, for its replay   */
byte first_key;

#ifdef HOSTRULES
/* Egress by name (§4.5).  The helper's memory dies with it: the cleanup
 * step that stops the helper forgets it (a dead helper's is never read:
 * every use needs helper == P_ALIVE). */
byte bound;                    /* helper: names bound to their address by its own resolution (BIT(n)),
                                  and the allowed name canary, bound when it starts */
byte live;                     /* helper: its live rule for N_DENIED, L_*   */
byte live_by;                  /* who added that rule, BY_*                 */
byte helper_digest;            /* digest covering the rules the helper was started with */
byte canary_ok;                /* the name canaries that passed, C_*        */
byte names_digest;             /* the digest the passed canaries attested   */
bool kept;                     /* Domain Store: the developer kept the rule for N_DENIED */
byte nallow;                   /* the developer's allows so far             */
#endif

byte faults;
#if defined(LIVENESS) || defined(WITNESS)
byte view_died_gen;            /* ghost: generation whose view was killed */
#endif
#if defined(WITNESS) && defined(HOSTRULES)
byte denied_used_gen;          /* ghost: generation in which a connection to N_DENIED passed under a live rule */
#endif

/* ------------------------------------------------------------------ */
/* Derived predicates                                                  */
/* ------------------------------------------------------------------ */

#define connected(c)   (cl[c] == CL_WAITING || cl[c] == CL_ACTIVE)
#define outstanding(r) (rq[r] == RQ_ACCEPTED || rq[r] == RQ_RUNNING)
#define outstanding_for(c) \
	((outstanding(1) && rq_route[1] == c) || (outstanding(2) && rq_route[2] == c))
#define waiting_client \
	((cl[1] == CL_WAITING && cl_alive[1]) || (cl[2] == CL_WAITING && cl_alive[2]))
#define cleaning       (phase == D_STOPPING || phase == D_FAILED)
#define sandbox_gone   (sandbox_gen == 0 && runsc == P_NONE)
#define sidecar_gone   (helper_gen == 0 && helper == P_NONE && sup == P_NONE && VIEW_GONE)
#define all_clean      (sandbox_gone && sidecar_gone && anchor_gen == 0)
#define live_or_unreaped(p) (p == P_ALIVE || p == P_EXITED)

/* ------------------------------------------------------------------ */
/* Mutation points: each MUTANT switch breaks exactly one rule          */
/* ------------------------------------------------------------------ */

/* §5.2 step 6, with host rules: the rules the Domain Store keeps are sent
 * to the helper once the sandbox is ready, and the Domain is published
 * only when the helper holds them.  MUTANT publish_before_kept_rules
 * publishes without waiting for the answers. */
#if defined(HOSTRULES) && !defined(MUTANT_publish_before_kept_rules)
#define KEPT_GATE      (!kept || live == L_DOMAIN)
#else
#define KEPT_GATE      (true)
#endif

/* §5.2 publication gate: sandbox started AND network attested. */
#ifdef MUTANT_publish_before_network
#define PUBLISH_GATE   (sandbox_ready)
#else
#define PUBLISH_GATE   (sandbox_ready && net_ready && KEPT_GATE)
#endif

/* §5.2 MarkNetworkReady: attested from inside the live sandbox. */
#ifdef MUTANT_network_ready_before_sandbox
#define NET_READY_GATE (helper == P_ALIVE && helper_gen == gen)
#else
#define NET_READY_GATE (attested == gen && sandbox_ready)
#endif

/* §4.6 the workspace view is started (mounted, ready) before runsc, and
 * runsc starts only while this generation's view is alive.  MUTANT
 * view_after_sandbox starts runsc first and the view after it. */
#ifdef MUTANT_view_after_sandbox
#define VIEW_GATE      (true)
#define START_VIEW     skip
#else
#define VIEW_GATE      (view == P_ALIVE && view_gen == g)
#define START_VIEW     view = P_ALIVE; view_gen = g
#endif

/* §5.2 runsc starts once the State Anchor, the view and the helper are up. */
#ifdef MUTANT_sandbox_waits_for_network
#define SANDBOX_GATE   (net_ready)
#else
#define SANDBOX_GATE   (helper == P_ALIVE && anchor_gen == g && VIEW_GATE)
#endif

/* §4.6 the overlay is mounted only over a lower the generation leases
 * (record_generation() before the bundle and mounts).  MUTANT
 * mount_before_lease mounts without waiting for the lease. */
#ifdef MUTANT_mount_before_lease
#define LEASE_GATE     (true)
#else
#define LEASE_GATE     (lease_gen == g)
#endif

/* §4.6 `state gc` removes only a lower no lease holds.  MUTANT
 * gc_ignores_lease removes it whatever the catalog says. */
#ifdef MUTANT_gc_ignores_lease
#define GC_GATE        (true)
#else
#define GC_GATE        (lease_gen == 0)
#endif

/* §5.3 `lazaretctl state reset` (and verify, and changes apply) needs a
 * stopped Domain: it takes the Domain lock, so no coordinator holds it,
 * and then waits until the sandbox scope, which holds the supervisor, the
 * view, runsc and their mounts of the Domain's state, has no process: a
 * coordinator killed without its teardown drops the lock at once, and the
 * user manager stops its scope later.  MUTANT reset_while_going_down
 * takes "not published" for stopped, as lazaretctl once did (the bus name
 * goes at the start of teardown, the unmounts come later). */
#define STATE_IN_USE   (sup != P_NONE || view != P_NONE || sandbox_gen != 0)
#ifdef MUTANT_reset_while_going_down
#define RESET_GATE     (!published)
#else
#define RESET_GATE     (flock_owner == 0 && !STATE_IN_USE)
#endif

/* §5.4 OpenSession is served only by a published Domain. */
#ifdef MUTANT_admit_before_publish
#define ADMIT_GATE     (phase == D_STARTING || phase == D_RUNNING)
#else
#define ADMIT_GATE     (phase == D_RUNNING)
#endif

/* §5.6 the request must verify against the claimed session's key. */
#ifdef MUTANT_route_by_claimed_session
#define SIGNATURE_OK(r) (true)
#else
#define SIGNATURE_OK(r) (sess_key[rq_claim[r]] == rq_key[r])
#endif

/* §5.5 the credential must be issued by the current generation's Trust
 * Anchor (a new CA per generation): one the sandbox kept from an earlier
 * generation, or forged, is refused.  MUTANT accept_old_credential keeps
 * one CA across generations (or skips the chain check). */
#define OTHER_GEN 255
#ifdef MUTANT_accept_old_credential
#define CREDENTIAL_OK(r) (true)
#else
#define CREDENTIAL_OK(r) (rq_cred_gen[r] == sandbox_gen)
#endif

/* §5.6 a request ID accepted once is refused ever after (replay).
 * MUTANT accept_replay forgets the IDs it saw. */
#define REQ_ID(r) (rq_copy_of[r] != 0 -> rq_copy_of[r] : r)
#ifdef MUTANT_accept_replay
#define FRESH_ID(r) (true)
#else
#define FRESH_ID(r) (!id_seen[REQ_ID(r)])
#endif

/* §5.6 cancel/deadline acts only on a request without a result. */
#ifdef MUTANT_cancel_after_result
#define CANCEL_GATE(r) (rq[r] >= RQ_ACCEPTED)
#else
#define CANCEL_GATE(r) (outstanding(r))
#endif

/* §5.6 step 2: a session has one result file and one request waiting at a
 * time, so an earlier request of the session still outstanding when a new
 * one is accepted lost its client: it ends first, cancelled ("superseded").
 * MUTANT keep_superseded leaves it running; its result then lands in the
 * file over the later request's. */
#ifdef MUTANT_keep_superseded
#define SUPERSEDE(o, c) skip
#else
#define SUPERSEDE(o, c) if :: outstanding(o) && rq_route[o] == c -> host_cmd[o] = false; deliver_result(o) :: else fi
#endif

/* §5.6 a cancelled request still gets its "cancelled" result. */
#ifdef MUTANT_cancel_without_result
#define CANCEL_RESULT(r) rq[r] = RQ_DROPPED; retire(r)
#else
#define CANCEL_RESULT(r) deliver_result(r)
#endif

/* §5.3 ordered cleanup: sandbox, then sidecar, then State Anchor. */
#ifdef MUTANT_helper_before_sandbox
#define SIDECAR_GATE   (true)
#else
#define SIDECAR_GATE   (sandbox_gone)
#endif
#ifdef MUTANT_unmount_before_sandbox
#define UNMOUNT_GATE   (true)
#else
#define UNMOUNT_GATE   (sandbox_gone && sidecar_gone)
#endif

/* §5.3 stopping the sidecar (the supervisor) ends the view with it.
 * MUTANT teardown_forgets_view leaves the view running and closes the
 * generation without it. */
#ifdef MUTANT_teardown_forgets_view
#define VIEW_GONE      (true)
#define STOP_VIEW      skip
#else
#define VIEW_GONE      (view_gen == 0 && view == P_NONE)
#define STOP_VIEW      view = P_NONE; view_gen = 0
#endif

/* §5.7 the view's death fails the Domain (the supervisor reports FAILED
 * naming it and exits).  MUTANT ignore_view_death: the supervisor's wait
 * loop reaps a dead view of a running Domain and reports nothing, so the
 * Domain goes on; MUTANT view_death_unseen watches no view at all. */
#ifdef MUTANT_ignore_view_death
#define DEATH_FAILS    (phase != D_RUNNING || sup == P_EXITED || runsc == P_EXITED || helper == P_EXITED)
#else
#define DEATH_FAILS    (true)
#endif
#ifdef MUTANT_view_death_unseen
#define VIEW_DIED      (false)
#else
#define VIEW_DIED      (view == P_EXITED)
#endif

/* §4.5 "Egress by name", the helper's rules (-DHOSTRULES).  What the
 * helper allows now: a profile rule, its live rule while in force, and the
 * allowed name canary, held apart from the rules.  The assertions at a
 * connection read the same macro: it is the developer's rules, and the
 * gates below are the helper's code that must keep to them. */
#define NAME_ALLOWED(n) (n == N_OK || n == N_CANARY || (n == N_DENIED && live != L_NONE))

/* The frame filter resets a SYN to an address no name of the helper's own
 * resolutions is bound to (frame_in(): name_by_synth() finds none).
 * MUTANT admit_unbound_address lets it through (as if allowed by address). */
#ifdef MUTANT_admit_unbound_address
#define UNBOUND_PASSES (true)
#else
#define UNBOUND_PASSES (false)
#endif

/* A SYN to a bound address passes only while a rule allows its name now:
 * a lapsed once rule still has its listener (rules_allow() decides).
 * MUTANT admit_lapsed_rule takes the listener for the rule. */
#ifdef MUTANT_admit_lapsed_rule
#define SYN_IN_FORCE(a) (true)
#else
#define SYN_IN_FORCE(a) (NAME_ALLOWED(a))
#endif

/* The first bytes (ClientHello server_name on 443, Host on 80) must name
 * the name bound to the address (check_first_bytes()).  MUTANT
 * skip_sni_check carries whatever they name to the bound name's
 * addresses, where the server answers for the name they carry. */
#ifdef MUTANT_skip_sni_check
#define SNI_MATCHES(a, s) (true)
#else
#define SNI_MATCHES(a, s) (s == a)
#endif

/* The rules reach the supervisor inside the policy's canonical bytes, so
 * the helper holds the rules of the digest the coordinator derived and
 * the attestation reports.  MUTANT rules_outside_digest passes them beside
 * the policy: the helper may hold rules no attested digest covers. */
#ifndef HOSTRULES
#define HELPER_RULES(g)     /* nothing: not even a skip, which would be a step */
#elif defined(MUTANT_rules_outside_digest)
#define HELPER_RULES(g) if :: helper_digest = g :: helper_digest = OTHER_DIGEST fi; bound = BIT(N_CANARY)
#else
/* The helper starts with its rules and the allowed name canary bound
 * (egress.c binds it first, to the pool's first address, which the probe
 * dials while it resolves the name). */
#define HELPER_RULES(g) helper_digest = g; bound = BIT(N_CANARY)
#endif

/* The coordinator derives each generation's policy anew (the
 * configuration may have changed): each generation its own digest. */
#define RULE_DIGEST    (gen)

#ifdef HOSTRULES
/* A DNS question for n from the sandbox: the helper answers an allowed
 * name with its synthetic address, bound from then on; any other is
 * NXDOMAIN, and for N_DENIED an event to the coordinator's watch.  The
 * event only ever suggests a rule; MUTANT allow_on_denial makes it one. */
inline helper_resolve(n, answered) {
	if
	:: NAME_ALLOWED(n) -> bound = bound | BIT(n); answered = true
	:: else -> answered = false
#ifdef MUTANT_allow_on_denial
		; if :: n == N_DENIED && live == L_NONE -> live = L_DOMAIN; live_by = BY_SANDBOX :: else fi
#endif
	fi
}

/* A TCP connection from the sandbox to address a whose first bytes name s:
 * the frame filter's SYN check, the first bytes' check and the dial, in
 * one step of the helper.  An admitted connection reaches the server of
 * the bound name's addresses, which answers for the name s. */
inline helper_connect(a, s, admitted) {
	if
	:: bound & BIT(a) -> admitted = (SYN_IN_FORCE(a) && SNI_MATCHES(a, s))
	:: else -> admitted = UNBOUND_PASSES
	fi;
	if
	:: admitted ->
		assert(bound & BIT(a));                           /* INV UnboundAddressNeverDialled */
		assert(NAME_ALLOWED(a) && NAME_ALLOWED(s))        /* INV DeniedNameNeverReached */
	:: else
	fi
}

/* One name canary's verdict: a failure is FAILED, and the supervisor exits
 * (the view with it, PR_SET_PDEATHSIG); the Domain is never published. */
inline name_canary(c, pass) {
	if
	:: pass -> canary_ok = canary_ok | c
	:: else -> sup = P_EXITED; if :: view == P_ALIVE -> view = P_EXITED :: else fi
	fi;
	ok = false
}

/* §4.5 "Proven from inside: the name canaries": run by the probe in the
 * live sandbox through the live helper, each one step, in the order the
 * supervisor judges them.  The allowed name's connection goes to the
 * address bound when the helper started, beside its question (the probe
 * requires the answer to be that address): both must pass.  It is also
 * the start's positive proof with host rules: the probe runs no allowed
 * address canary then (§4.5 "One link answers"), so the step below stands
 * for the routes, the denied canary and the witness. */
#define PROBE_GATE (!sup_stop && runsc == P_ALIVE && helper == P_ALIVE)
inline name_canaries() {
	atomic { PROBE_GATE ->
		helper_connect(N_CANARY, N_CANARY, ok);
		if :: ok -> helper_resolve(N_CANARY, ok) :: else fi;
		name_canary(C_ALLOWED, ok) };
	atomic { PROBE_GATE -> helper_resolve(N_CDENIED, ok); name_canary(C_DENIED, !ok) };
	atomic { PROBE_GATE -> helper_connect(A_UNBOUND, N_CANARY, ok); name_canary(C_DIRECT, !ok) };
	atomic { PROBE_GATE -> helper_connect(N_CANARY, N_CDENIED, ok); name_canary(C_HELLO, !ok) }
}

/* The helper's memory goes with it (the cleanup step stops it). */
#define FORGET_HELPER  bound = 0; live = L_NONE; live_by = 0; helper_digest = 0; canary_ok = 0; names_digest = 0
#define NAMES_ATTESTED names_digest = helper_digest
/* The supervisor reports "attested" only once every name canary passed
 * (supnet_judge() requires all four lines, in order).  MUTANT
 * publish_without_name_canaries reports it first and runs them after. */
#if defined(MUTANT_publish_without_name_canaries)
#define CANARY_GATE    (true)
#else
#define CANARY_GATE    (canary_ok == C_ALL)
#endif
#else
#define FORGET_HELPER
#define NAMES_ATTESTED
#define CANARY_GATE    (true)
#endif

/* ------------------------------------------------------------------ */
/* Coordinator helpers (each runs inside one handler)                  */
/* ------------------------------------------------------------------ */

/* A request reached a terminal state: forget its routing data.  A
 * dropped request keeps rq_route, which the invariants use to check
 * that its session really disconnected. */
/* §5.6 the prompt: term_prompt_reset before the first line, in the same
 * step that routes the request (request_accept() -> request_prompt()). */
#ifdef MUTANT_skip_prompt_reset
#define DRAW_PROMPT(r) pr_hidden[r] = true
#else
#define DRAW_PROMPT(r) skip
#endif

inline retire(r) {
	rq_claim[r] = 0;
	rq_key[r] = 0;
	rq_verdict[r] = V_NONE;
	if :: rq[r] != RQ_DROPPED -> rq_route[r] = 0 :: else fi
}

/* Write the session's one Escalation Result file (atomic rename into
 * results/), which must be for its newest request. */
inline deliver_result(r) {
	if :: newest[rq_route[r]] != r -> stale_result = true :: else fi;
	rq_results[r]++;
	rq[r] = RQ_DONE;
	retire(r)
}

/* A session ended: its outstanding requests end without a result, and
 * their host commands are killed (OR-3).  MUTANT strand_host_command
 * forgets the kill. */
inline drop_requests_of(c) {
	if
	:: outstanding(1) && rq_route[1] == c ->
		rq[1] = RQ_DROPPED; retire(1);
#ifndef MUTANT_strand_host_command
		host_cmd[1] = false
#endif
	:: else
	fi;
	if
	:: outstanding(2) && rq_route[2] == c ->
		rq[2] = RQ_DROPPED; retire(2);
#ifndef MUTANT_strand_host_command
		host_cmd[2] = false
#endif
	:: else
	fi
}

inline forget_session_of(c) {
	if
	:: sess_client[1] == c -> sess_client[1] = 0; sess_key[1] = 0
	:: else
	fi;
	if
	:: sess_client[2] == c -> sess_client[2] = 0; sess_key[2] = 0
	:: else
	fi
}

/* §5.4 a session's owner left the bus (sd_bus_track callback). */
inline disconnect(c) {
	cl[c] = CL_GONE;
	forget_session_of(c);
	drop_requests_of(c)
}

/* §5.3 end every session (SessionEnded), forget the keys, discard
 * requests not yet accepted.  Clients still waiting on the activation
 * socket are handled by the caller.  `me` is the coordinator that ends
 * them: SessionEnded reaches a client only while `me` owns the bus name;
 * if its bus connection is gone, clients see the name lose its owner. */
inline close_all_sessions(me) {
	assert((cl[1] != CL_ACTIVE && cl[2] != CL_ACTIVE) || bus_owner == me || !bus_conn[me]);  /* INV SessionEndAnnounced */
	if :: cl[1] == CL_ACTIVE -> cl[1] = CL_GONE :: else fi;
	if :: cl[2] == CL_ACTIVE -> cl[2] = CL_GONE :: else fi;
	sess_client[1] = 0; sess_key[1] = 0;
	sess_client[2] = 0; sess_key[2] = 0;
	if :: outstanding(1) -> rq[1] = RQ_DROPPED; retire(1) :: rq[1] == RQ_WRITTEN -> rq[1] = RQ_DISCARDED; retire(1) :: else fi;
	if :: outstanding(2) -> rq[2] = RQ_DROPPED; retire(2) :: rq[2] == RQ_WRITTEN -> rq[2] = RQ_DISCARDED; retire(2) :: else fi;
	host_cmd[1] = false;
	host_cmd[2] = false
}

/* Withdraw publication: the object and the bus name go away. */
inline withdraw(me) {
	published = false;
	if :: bus_owner == me -> bus_owner = 0 :: else fi
}

/* §5.3 one dispatch, steps 2-3 (C9): end every session, emitting
 * SessionEnded while the name is still owned, then withdraw
 * publication.  MUTANT release_name_before_session_end swaps them. */
inline end_sessions_and_withdraw(me) {
#ifdef MUTANT_release_name_before_session_end
	withdraw(me);
	close_all_sessions(me)
#else
	close_all_sessions(me);
	withdraw(me)
#endif
}

/* §5.3 Domain failure, first half: end every session, withdraw
 * publication and readiness, quiesce the supervisor, tell waiting
 * clients "failed".  Ordered cleanup follows. */
inline fail_domain(me) {
	phase = D_FAILED;
	end_sessions_and_withdraw(me);
#ifndef MUTANT_keep_network_ready_on_death
	net_ready = false;
#endif
	sup_stop = true;
	if :: cl[1] == CL_WAITING -> cl[1] = CL_GONE :: else fi;
	if :: cl[2] == CL_WAITING -> cl[2] = CL_GONE :: else fi
}

/* ------------------------------------------------------------------ */
/* Host Coordinator: lazaret@<id>.service main process (§4.1, §5)      */
/* ------------------------------------------------------------------ */

proctype Coordinator(byte me)
{
	bool started = false;      /* this instance began a generation */

	{
	/* §5.1 step 1: flock(LOCK_EX|LOCK_NB) on the Domain lock file.
	 * A busy lock means another coordinator owns the Domain: exit. */
	atomic {
		if
		:: flock_owner == 0 -> flock_owner = me
		:: else ->
#ifdef MUTANT_no_flock
			skip            /* MUTANT: EWOULDBLOCK ignored */
#else
			goto quit
#endif
		fi
	};

	/* §5.1 step 2: RequestName(org.lazaret.Domain.d<id>), no replacement.
	 * The code queues for at most two seconds while a dead predecessor's
	 * name is released; that wait is abstracted away here: a name still
	 * held when the request is decided means exit. */
	atomic {
		if
		:: bus_owner == 0 && bus_conn[me] ->
			bus_owner = me; is_owner[me] = true; nowners++
		:: else -> goto quit
		fi
	};

	/* §5.1 step 3: a dirty Domain Store record means an earlier
	 * generation's resources may still exist: recover them first. */
	atomic {
		if
#ifndef MUTANT_skip_recovery
		:: dirty -> phase = D_FAILED; sup_stop = true
#endif
		:: else -> phase = D_ABSENT
		fi
	};

	/* The coordinator's event loop: one option per sd-event handler. */
	do
	/* ---- §5.2 startup -------------------------------------------- */
	:: atomic { phase == D_ABSENT && !started && bus_conn[me] ->
		/* Begin a generation: durable intent first, then resources. */
		assert(all_clean && !dirty);  /* INV OrderedFailureRecovery */
		started = true;
		gen++;
		sandbox_coord = me;
		dirty = true;
		phase = D_STARTING;
		sup_stop = false;
		sandbox_ready = false;
		net_ready = false;
		/* image_prepare(): a lower `state gc` removed is prepared again */
		lower_gone = false;
		/* newuidmap/newgidmap, then release the supervisor */
		sup = P_ALIVE;
		sup_gen = gen }
	:: atomic { phase == D_STARTING && lease_gen != gen ->
		/* §4.6 the lease in the Storage Catalog (replacing a dead
		 * owner's), then the lower must still be there: gc may have
		 * removed it between the preparation and the lease */
		lease_gen = gen;
		if
		:: lower_gone -> fail_domain(me)
		:: else
		fi }
	:: atomic { phase == D_STARTING && !net_ready && NET_READY_GATE ->
		net_ready = true }                       /* MarkNetworkReady */
	:: atomic { phase == D_STARTING && PUBLISH_GATE ->
		published = true;                        /* PublishDomain */
		phase = D_RUNNING }
#ifdef HOSTRULES
	/* §5.2 step 6: the kept rules, sent as Domain-life rules once the
	 * sandbox is ready (manager_egress_start()); answered, they are held */
	:: atomic { phase == D_STARTING && sandbox_ready && net_ready && kept && live != L_DOMAIN && helper == P_ALIVE ->
		live = L_DOMAIN; live_by = BY_DEVELOPER }
	/* §4.5 "A denied name": the developer allows N_DENIED (the prompt's
	 * key, AllowEgress, `lazaretctl egress allow`): once, for the
	 * Domain's life, or kept (the Domain Store first), sent by add_host */
	:: atomic { phase == D_RUNNING && helper == P_ALIVE && live != L_DOMAIN && nallow < MAXALLOW ->
		nallow++;
		if
		:: live = L_ONCE
		:: live = L_DOMAIN
		:: kept = true; live = L_DOMAIN
		fi;
		live_by = BY_DEVELOPER }
#endif

	/* ---- §5.4 sessions: OpenSession and peer disconnects --------- */
	:: atomic { ADMIT_GATE && cl[1] == CL_WAITING && cl_alive[1] ->
		if
		:: sess_client[1] == 0 -> sess_client[1] = 1; sess_key[1] = 1
		:: else -> sess_client[2] = 1; sess_key[2] = 1
		fi;
		cl[1] = CL_ACTIVE }
	:: atomic { ADMIT_GATE && cl[2] == CL_WAITING && cl_alive[2] ->
		if
		:: sess_client[1] == 0 -> sess_client[1] = 2; sess_key[1] = 2
		:: else -> sess_client[2] = 2; sess_key[2] = 2
		fi;
		cl[2] = CL_ACTIVE }
	:: atomic { connected(1) && !cl_alive[1] -> disconnect(1) }
	:: atomic { connected(2) && !cl_alive[2] -> disconnect(2) }

	/* ---- §5.3 teardown: the last session left, the idle timer fired
	 * on a Domain nobody opened a session on, or Stop() / SIGTERM /
	 * SIGINT (from Faults), which may come while sessions are active - */
	:: atomic { phase == D_RUNNING && (stop_req == me || (cl[1] != CL_ACTIVE && cl[2] != CL_ACTIVE)) ->
		phase = D_STOPPING;
		end_sessions_and_withdraw(me);
		net_ready = false;
		sup_stop = true }  /* waiting clients hear "stopping" and retry */

	/* ---- §5.7 child deaths (pidfd / scope state) and bus loss ------ */
	:: atomic { sup == P_EXITED || runsc == P_EXITED || helper == P_EXITED || VIEW_DIED ->
		if
		:: (phase == D_STARTING || phase == D_RUNNING) && DEATH_FAILS -> fail_domain(me)
		:: else
		fi;
		if :: sup == P_EXITED -> sup = P_NONE :: else fi;
		if :: runsc == P_EXITED -> runsc = P_NONE :: else fi;
		if :: helper == P_EXITED -> helper = P_NONE :: else fi;
		if :: VIEW_DIED -> view = P_NONE :: else fi }
	:: atomic { !bus_conn[me] && (phase == D_STARTING || phase == D_RUNNING) ->
		fail_domain(me) }

	/* ---- §5.6 escalation: verify and route, decide, result -------- */
	:: atomic { rq[1] == RQ_WRITTEN ->
		if
		:: phase == D_RUNNING && sess_client[rq_claim[1]] != 0 && CREDENTIAL_OK(1) && SIGNATURE_OK(1) && FRESH_ID(1) ->
			id_seen[REQ_ID(1)] = true;
			rq_was_accepted[1] = true;
			rq_accept_gen[1] = sandbox_gen;
			rq_route[1] = sess_client[rq_claim[1]];
			SUPERSEDE(2, rq_route[1]);
			newest[rq_route[1]] = 1;
			rq[1] = RQ_ACCEPTED;
			DRAW_PROMPT(1)
		:: else -> rq[1] = RQ_DISCARDED; retire(1)
		fi }
	:: atomic { rq[2] == RQ_WRITTEN ->
		if
		:: phase == D_RUNNING && sess_client[rq_claim[2]] != 0 && CREDENTIAL_OK(2) && SIGNATURE_OK(2) && FRESH_ID(2) ->
			id_seen[REQ_ID(2)] = true;
			rq_was_accepted[2] = true;
			rq_accept_gen[2] = sandbox_gen;
			rq_route[2] = sess_client[rq_claim[2]];
			SUPERSEDE(1, rq_route[2]);
			newest[rq_route[2]] = 2;
			rq[2] = RQ_ACCEPTED;
			DRAW_PROMPT(2)
		:: else -> rq[2] = RQ_DISCARDED; retire(2)
		fi }
	:: atomic { rq[1] == RQ_ACCEPTED && rq_verdict[1] != V_NONE ->
		if
		:: rq_verdict[1] == V_APPROVE -> host_cmd[1] = true; rq[1] = RQ_RUNNING
#ifdef MUTANT_deny_without_result
		:: else -> rq[1] = RQ_RUNNING   /* MUTANT: deny falls through */
#else
		:: else -> deliver_result(1)     /* "denied" */
#endif
		fi }
	:: atomic { rq[2] == RQ_ACCEPTED && rq_verdict[2] != V_NONE ->
		if
		:: rq_verdict[2] == V_APPROVE -> host_cmd[2] = true; rq[2] = RQ_RUNNING
#ifdef MUTANT_deny_without_result
		:: else -> rq[2] = RQ_RUNNING
#else
		:: else -> deliver_result(2)
#endif
		fi }
	:: atomic { rq[1] == RQ_RUNNING && host_cmd[1] ->
		host_cmd[1] = false; deliver_result(1) }  /* "completed" + status */
	:: atomic { rq[2] == RQ_RUNNING && host_cmd[2] ->
		host_cmd[2] = false; deliver_result(2) }
	:: atomic { rq_cancel[1] ->                  /* cancel file or deadline */
		rq_cancel[1] = false;
		if
		:: CANCEL_GATE(1) -> host_cmd[1] = false; CANCEL_RESULT(1)
		:: else
		fi }
	:: atomic { rq_cancel[2] ->
		rq_cancel[2] = false;
		if
		:: CANCEL_GATE(2) -> host_cmd[2] = false; CANCEL_RESULT(2)
		:: else
		fi }

	/* ---- §5.3 ordered cleanup: teardown, failure and recovery ----- */
	:: atomic { cleaning && !sandbox_gone && (sup != P_ALIVE || sup_stop) ->
		/* StopUnit(sandbox scope), then `runsc delete --force` */
		runsc = P_NONE;
		sandbox_gen = 0;
		sandbox_ready = false }
	:: atomic { cleaning && SIDECAR_GATE && !sidecar_gone ->
		assert(sandbox_gone);   /* INV OrderedFailureRecovery */
		/* StopUnit(helper scope); SIGKILL + reap the supervisor and
		 * with it every helper it supervises, the view included */
		helper = P_NONE;
		helper_gen = 0;
		sup = P_NONE;
		STOP_VIEW;
		attested = 0;
		FORGET_HELPER }
	:: atomic { cleaning && UNMOUNT_GATE && anchor_gen != 0 ->
		anchor_gen = 0 }        /* umount the State Anchor overlay */
	:: atomic { cleaning && all_clean ->
		dirty = false;          /* Domain Store: generation closed */
		lease_gen = 0;          /* its Storage Catalog lease released */
		phase = D_ABSENT }

	/* ---- exit: the process ends, the kernel drops the lock --------- */
	:: atomic { phase == D_ABSENT && (started || !bus_conn[me]) ->
		withdraw(me);
		is_owner[me] = false;
		nowners--;
		goto quit }
	od;

quit:
	atomic {
		if :: flock_owner == me -> flock_owner = 0 :: else fi;
		if :: unit_inst[me] -> unit_active = false :: else fi;
		coord_alive[me] = false;
		bus_conn[me] = false
	}
	} unless { !coord_alive[me] }   /* killed: see coordinator_dies() */
}

/* ------------------------------------------------------------------ */
/* Runtime Supervisor (§4.4): one process per generation.  Modelled as */
/* one Promela process that serves each generation in turn.            */
/* ------------------------------------------------------------------ */

active proctype Supervisor()
{
	byte g = 0;
#ifdef HOSTRULES
	bool ok;                /* a name canary's outcome, false between steps */
#endif
end_sup:
	do
	:: atomic { sup == P_ALIVE && sup_gen != g -> g = sup_gen }
		{
		/* mount the State Anchor overlay over the prepared lower;
		 * stage the mount plan: mount /dev/fuse on the workspace's
		 * staged path and start lazaret-view on it (supervised
		 * helper, ready byte, PR_SET_PDEATHSIG); network namespace,
		 * deny routes on the deny0 veth, IPv6 off; then slirp4netns
		 * (transient scope) with --ready-fd */
		atomic { !sup_stop && LEASE_GATE -> anchor_gen = g; START_VIEW; helper = P_ALIVE; helper_gen = g; HELPER_RULES(g) };
		/* non-detached `runsc run` in its own transient scope */
		atomic { !sup_stop && SANDBOX_GATE ->
			runsc = P_ALIVE; sandbox_gen = g; sandbox_ready = true };
#ifdef MUTANT_view_after_sandbox
		atomic { !sup_stop -> view = P_ALIVE; view_gen = g };   /* MUTANT */
#endif
#if defined(HOSTRULES) && !defined(MUTANT_publish_without_name_canaries)
		name_canaries();
#endif
		/* canary probe from inside the live sandbox through the live
		 * helper (with host rules, after the name canaries, the allowed
		 * name canary in the allowed address canary's place);
		 * CAP_NET_ADMIN dropped; report "attested" */
		atomic { !sup_stop && runsc == P_ALIVE && helper == P_ALIVE && CANARY_GATE ->
			attested = g; NAMES_ATTESTED };
#if defined(HOSTRULES) && defined(MUTANT_publish_without_name_canaries)
		name_canaries();    /* MUTANT: after the report, judged by no one */
#endif
end_sup_idle:
		false               /* serve until told to stop or killed */
		} unless { sup != P_ALIVE || sup_gen != g || sup_stop }
	od
}

/* ------------------------------------------------------------------ */
/* lazaretctl launch (§5.4): connect, OpenSession, answer prompts.     */
/* ------------------------------------------------------------------ */

inline decide(r) {
	if
	:: rq_verdict[r] = V_APPROVE; rq_unseen[r] = pr_hidden[r]
	:: rq_verdict[r] = V_DENY
	:: cl_alive[c] = false      /* [Q] abort: lazaretctl exits */
	fi
}

proctype Client(byte c)
{
	cl[c] = CL_WAITING;         /* connect to lazaret@<id>.socket */
	{
	do
	:: cl[c] == CL_ACTIVE -> break
	:: cl[c] == CL_GONE -> goto done
	:: timeout -> cl_alive[c] = false; goto done   /* startup deadline */
	od;
	do
	/* The human's key: it counts once the prompt was written whole and
	 * no key came for the quiet period, which the model lets pass in the
	 * same step as the decision it precedes. */
	:: atomic { rq[1] == RQ_ACCEPTED && rq_route[1] == c && rq_verdict[1] == V_NONE -> decide(1) }
	:: atomic { rq[2] == RQ_ACCEPTED && rq_route[2] == c && rq_verdict[2] == V_NONE -> decide(2) }
	/* A key typed before the prompt could be read (meant for the sandbox,
	 * or a report the terminal sent) arrives while it is being written:
	 * dropped, a no-op, so written out only for MUTANT skip_quiet_period,
	 * which takes it as the approve key. */
#ifdef MUTANT_skip_quiet_period
	:: atomic { rq[1] == RQ_ACCEPTED && rq_route[1] == c && rq_verdict[1] == V_NONE ->
		rq_verdict[1] = V_APPROVE; rq_unseen[1] = true }
	:: atomic { rq[2] == RQ_ACCEPTED && rq_route[2] == c && rq_verdict[2] == V_NONE ->
		rq_verdict[2] = V_APPROVE; rq_unseen[2] = true }
#endif
	:: atomic { cl[c] == CL_ACTIVE && !outstanding_for(c) ->
		cl_alive[c] = false; break }   /* session command finished */
	:: cl[c] == CL_GONE -> break        /* SessionClosed / Domain gone */
	od
	} unless { !cl_alive[c] };
done:
	skip
}

/* ------------------------------------------------------------------ */
/* Escalation client inside the sandbox (§5.6).  Untrusted: it may     */
/* claim any session and sign with any key it can read, or a bogus one.*/
/* ------------------------------------------------------------------ */

active proctype Escalator()
{
end_esc:
	do
	:: atomic { nreq < MAXREQ && runsc == P_ALIVE && (sess_key[1] != 0 || sess_key[2] != 0) ->
		nreq++;
		if
		:: rq_claim[nreq] = 1
		:: rq_claim[nreq] = 2
		fi;
		if
		:: sess_key[1] != 0 -> rq_key[nreq] = sess_key[1]
		:: sess_key[2] != 0 -> rq_key[nreq] = sess_key[2]
		:: rq_key[nreq] = BOGUS_KEY
		fi;
		/* the credential: this generation's, or one kept from another */
		if
		:: rq_cred_gen[nreq] = sandbox_gen
		:: rq_cred_gen[nreq] = OTHER_GEN
		fi;
		if :: nreq == 1 -> first_claim = rq_claim[1]; first_key = rq_key[1] :: else fi;
		rq[nreq] = RQ_WRITTEN }
	/* a replay: request 1's bytes written again as request 2 */
	:: atomic { nreq == 1 && runsc == P_ALIVE ->
		nreq++;
		rq_copy_of[2] = 1;
		rq_claim[2] = first_claim;
		rq_key[2] = first_key;
		rq_cred_gen[2] = rq_cred_gen[1];
		rq[2] = RQ_WRITTEN }
	/* §5.6 a desktop-notification action that does not come from the
	 * notification server's unique name (any other bus peer may emit
	 * ActionInvoked) changes nothing: in the model it is a no-op, so it is
	 * written out only for MUTANT accept_any_sender, which takes it. */
#ifdef MUTANT_accept_any_sender
	:: atomic { rq[1] == RQ_ACCEPTED && rq_verdict[1] == V_NONE -> rq_verdict[1] = V_APPROVE; rq_forged[1] = true }
	:: atomic { rq[2] == RQ_ACCEPTED && rq_verdict[2] == V_NONE -> rq_verdict[2] = V_APPROVE; rq_forged[2] = true }
#endif
	:: atomic { runsc == P_ALIVE && outstanding(1) && !rq_cancel[1] -> rq_cancel[1] = true }
	:: atomic { runsc == P_ALIVE && outstanding(2) && !rq_cancel[2] -> rq_cancel[2] = true }
	:: break                    /* the agent stops escalating */
	od
}

#ifdef HOSTRULES
/* ------------------------------------------------------------------ */
/* The agent's network traffic (§4.5 "Egress by name"), -DHOSTRULES.   */
/* Untrusted: it asks for any name and connects to any address with    */
/* first bytes naming any name.  Each question or connection is        */
/* answered by the egress helper in one step.  The sandbox runs the    */
/* agent once it is published (sessions); before that, only the probe. */
/* ------------------------------------------------------------------ */

#define TRAFFIC (phase == D_RUNNING && runsc == P_ALIVE && helper == P_ALIVE)

active proctype Agent()
{
	bool ok;
end_agent:
	do
	:: atomic { TRAFFIC -> helper_resolve(N_OK, ok); ok = false }
	:: atomic { TRAFFIC -> helper_resolve(N_DENIED, ok); ok = false }
	:: atomic { TRAFFIC -> helper_connect(N_OK, N_OK, ok); ok = false }
	/* the allowed name's address, a ClientHello naming another name */
	:: atomic { TRAFFIC -> helper_connect(N_OK, N_DENIED, ok); ok = false }
	:: atomic { TRAFFIC -> helper_connect(N_DENIED, N_DENIED, ok);
#ifdef WITNESS
		if :: ok -> denied_used_gen = gen :: else fi;
#endif
		ok = false }
	/* an address no name resolved to: a real one, or the pool's last */
	:: atomic { TRAFFIC -> helper_connect(A_UNBOUND, N_OK, ok); ok = false }
	/* §4.5 "The sandbox never adds a name": the helper's API socket is a
	 * host path the sandbox's mounts do not hold, so an add_host of the
	 * sandbox's is written out only for MUTANT sandbox_reaches_api_socket */
#ifdef MUTANT_sandbox_reaches_api_socket
	:: atomic { TRAFFIC && live == L_NONE -> live = L_DOMAIN; live_by = BY_SANDBOX }
#endif
	/* the helper's timer: a once rule lapses (used, after its answer's
	 * TTL; unused, after 5 minutes) */
	:: atomic { helper == P_ALIVE && live == L_ONCE -> live = L_NONE; live_by = 0 }
	od
}
#endif

/* ------------------------------------------------------------------ */
/* systemd user manager and dbus-daemon (§4.1)                         */
/* ------------------------------------------------------------------ */

inline start_coordinator(by_unit) {
	ncand++;
	coord_alive[ncand] = true;
	bus_conn[ncand] = true;
	unit_inst[ncand] = by_unit;
	run Coordinator(ncand)
}

active proctype UserManager()
{
end_um:
	do
	/* socket activation: a pending connection starts the unit */
	:: atomic { !unit_active && ncand < NCAND && waiting_client ->
		unit_active = true;
		start_coordinator(true) }
	/* a coordinator started outside the unit (by hand, second user
	 * manager): only the flock keeps it out */
	:: atomic { !stray_used && ncand < NCAND && flock_owner != 0 ->
		stray_used = true;
		start_coordinator(false) }
	/* dbus-daemon frees the names of a closed connection */
	:: atomic { bus_owner != 0 && !bus_conn[bus_owner] -> bus_owner = 0 }
	/* the sandbox scope is bound to its coordinator's service (BindsTo=,
	 * C6): once that coordinator is gone, the user manager stops the
	 * scope, ending runsc and the sandbox (PR_SET_PDEATHSIG already took
	 * the supervisor).  Asynchronous: the next owner's recovery (§5.1
	 * step 3) may come first and does the same. */
	:: atomic { sandbox_coord != 0 && !coord_alive[sandbox_coord] && !sandbox_gone ->
		runsc = P_NONE;
		sandbox_gen = 0 }
	od
}

/* ------------------------------------------------------------------ */
/* Fault injection (§5.7) and Stop(), together bounded by NFAULT       */
/* ------------------------------------------------------------------ */

/* The kernel closes the dead coordinator's fds: the flock goes, the bus
 * connection closes.  PR_SET_PDEATHSIG kills the supervisor and host
 * commands; systemd stops what is left of the service cgroup.  runsc,
 * its sandbox and slirp4netns live in their own scopes and survive; the
 * user manager stops the sandbox scope later (UserManager, BindsTo=). */
inline coordinator_dies(i) {
	coord_alive[i] = false;
	bus_conn[i] = false;
	if :: flock_owner == i -> flock_owner = 0 :: else fi;
	if :: unit_inst[i] -> unit_active = false :: else fi;
	if
	:: is_owner[i] ->
		is_owner[i] = false;
		nowners--;
		if :: phase != D_ABSENT -> phase = D_FAILED :: else fi;
		published = false;
		net_ready = false;
		sandbox_ready = false;
		close_all_sessions(i);
		if :: sup != P_NONE -> sup = P_NONE :: else fi;
		/* the supervisor's PR_SET_PDEATHSIG takes the view with it */
		if :: view != P_NONE -> view = P_NONE :: else fi;
		/* waiting clients see their connection close unanswered */
		if :: cl[1] == CL_WAITING -> cl[1] = CL_GONE :: else fi;
		if :: cl[2] == CL_WAITING -> cl[2] = CL_GONE :: else fi
	:: else
	fi
}

active proctype Faults()
{
	byte victim;
end_faults:
	do
	:: atomic { faults < NFAULT && flock_owner != 0 && coord_alive[flock_owner] ->
		faults++; victim = flock_owner; coordinator_dies(victim); victim = 0 }
	:: atomic { faults < NFAULT && flock_owner != 0 && bus_conn[flock_owner] ->
		faults++; bus_conn[flock_owner] = false }   /* bus connection lost */
	:: atomic { faults < NFAULT && sup == P_ALIVE -> faults++; sup = P_EXITED;
		/* PR_SET_PDEATHSIG: the view dies with the supervisor */
		if :: view == P_ALIVE -> view = P_EXITED :: else fi }
	:: atomic { faults < NFAULT && runsc == P_ALIVE -> faults++; runsc = P_EXITED }
	:: atomic { faults < NFAULT && helper == P_ALIVE -> faults++; helper = P_EXITED }
	:: atomic { faults < NFAULT && view == P_ALIVE -> faults++; view = P_EXITED
#if defined(LIVENESS) || defined(WITNESS)
		; view_died_gen = view_gen
#endif
		}
	:: atomic { faults < NFAULT && connected(1) && cl_alive[1] -> faults++; cl_alive[1] = false }
	:: atomic { faults < NFAULT && connected(2) && cl_alive[2] -> faults++; cl_alive[2] = false }
	/* not a fault, but drawn from the same budget: `lazaretctl stop`,
	 * `systemctl --user stop` or a logout sends Stop() or SIGTERM to the
	 * running Domain's owner, whether or not sessions are active */
	:: atomic { faults < NFAULT && phase == D_RUNNING && stop_req == 0 ->
		faults++; stop_req = flock_owner }
	/* also from the same budget: `lazaretctl state gc` (§4.6), another
	 * process at any time, removes the prepared lower when no lease
	 * holds it */
	:: atomic { faults < NFAULT && !lower_gone && GC_GATE ->
		faults++; gc_runs++; lower_gone = true }
	/* and `lazaretctl state reset`: one rename of the layer into the
	 * trash, whatever is mounted over it */
	:: atomic { faults < NFAULT && RESET_GATE ->
		faults++;
		if :: STATE_IN_USE -> reset_under_mount = true :: else fi }
	od
}

init {
	atomic {
		cl_alive[1] = true;
		cl_alive[2] = true;
		run Client(1);
		run Client(2)
	}
}

/* ------------------------------------------------------------------ */
/* §7 invariants                                                       */
/* ------------------------------------------------------------------ */

#define ExclusiveOwnership       (nowners <= 1)

#define PublishedOnlyWhenReady \
	(!published || (phase == D_RUNNING && sandbox_ready && net_ready))

#define SessionsOnlyWhenPublished \
	(published || (cl[1] != CL_ACTIVE && cl[2] != CL_ACTIVE))

#define NetworkReadinessBoundToSandbox \
	(!net_ready || (sandbox_ready && sandbox_gen == gen && helper_gen == gen \
	  && live_or_unreaped(runsc) && live_or_unreaped(helper)))

#define RESULT_CONSISTENT(r) \
	(rq_results[r] <= 1 \
	 && ((rq_results[r] == 1) == (rq[r] == RQ_DONE)) \
	 && (!host_cmd[r] || rq[r] == RQ_RUNNING) \
	 && (rq[r] != RQ_DROPPED || cl[rq_route[r]] == CL_GONE))
#define ResultDeliveryStateConsistent (RESULT_CONSISTENT(1) && RESULT_CONSISTENT(2))

#define OrderedFailureRecovery \
	((sandbox_gen == 0 || (anchor_gen == sandbox_gen && sandbox_gen == gen)) \
	 && (helper_gen == 0 || (anchor_gen == helper_gen && helper_gen == gen)) \
	 && (anchor_gen == 0 || anchor_gen == gen))

/* A mounted overlay's lower is there and leased by the mounting generation. */
#define LeaseProtectsLower \
	(anchor_gen == 0 || (lease_gen == anchor_gen && !lower_gone))

#define SandboxOnlyBehindView \
	(sandbox_gen == 0 || (view_gen == sandbox_gen && (live_or_unreaped(view) || cleaning)))

#define ViewNeverOutlivesGeneration \
	((view == P_NONE && view_gen == 0) || (view_gen == gen && dirty))

#define ROUTED_TO_SIGNER(r)      (!outstanding(r) || rq_route[r] == rq_key[r])
#define EscalationRoutedToSigner (ROUTED_TO_SIGNER(1) && ROUTED_TO_SIGNER(2))

#define EveryAcceptedRequestResolved (!outstanding(1) && !outstanding(2))

/* The session's one result file is only ever written for its newest request. */
#define ResultSlotHoldsNewest (!stale_result)

/* A request is accepted only with a credential of the generation that accepts it. */
#define CREDENTIAL_OF(r) (rq_accept_gen[r] == 0 || rq_cred_gen[r] == rq_accept_gen[r])
#define CredentialOfCurrentGeneration (CREDENTIAL_OF(1) && CREDENTIAL_OF(2))

/* A host command runs only on a verdict of the developer (terminal, D-Bus, the notification server's own action). */
#define ApprovedByDeveloper (!(rq_forged[1] && rq[1] == RQ_RUNNING) && !(rq_forged[2] && rq[2] == RQ_RUNNING))

/* Persistent state is reset only while nothing that mounts or serves it runs. */
#define ResetOnlyStopped (!reset_under_mount)

/* A command approved on a terminal ran only after the human could read the real one. */
#define PromptSeenBeforeApproval (!(rq_unseen[1] && rq[1] == RQ_RUNNING) && !(rq_unseen[2] && rq[2] == RQ_RUNNING))

/* A request's bytes are accepted at most once, however often they are written. */
#define ReplayRefused (rq_copy_of[2] == 0 || !(rq_was_accepted[1] && rq_was_accepted[2]))

#ifdef HOSTRULES
/* Published with host rules: every name canary passed, for this
 * generation's helper, holding the rules of this generation's digest. */
#define NameCanariesBeforePublication \
	(!published || (canary_ok == C_ALL && names_digest == RULE_DIGEST))

/* Every live rule the helper holds was added by the coordinator on the
 * developer's decision; nothing the sandbox chose is ever a rule. */
#define SandboxNeverAddsRule (live_by != BY_SANDBOX)

/* Published with a kept rule: the helper holds it. */
#define KeptRulesBeforePublication (!published || !kept || live == L_DOMAIN)
#endif

#if !defined(LIVENESS) && !defined(WITNESS)
/* Checked in every reachable state between atomic steps. */
active proctype Invariants()
{
end_inv:
	do
	:: atomic { !ExclusiveOwnership -> assert(ExclusiveOwnership) }                         /* INV ExclusiveOwnership */
	:: atomic { !PublishedOnlyWhenReady -> assert(PublishedOnlyWhenReady) }                 /* INV PublishedOnlyWhenReady */
	:: atomic { !SessionsOnlyWhenPublished -> assert(SessionsOnlyWhenPublished) }           /* INV SessionsOnlyWhenPublished */
	:: atomic { !NetworkReadinessBoundToSandbox -> assert(NetworkReadinessBoundToSandbox) } /* INV NetworkReadinessBoundToSandbox */
	:: atomic { !ResultDeliveryStateConsistent -> assert(ResultDeliveryStateConsistent) }   /* INV ResultDeliveryStateConsistent */
	:: atomic { !OrderedFailureRecovery -> assert(OrderedFailureRecovery) }                 /* INV OrderedFailureRecovery */
	:: atomic { !EscalationRoutedToSigner -> assert(EscalationRoutedToSigner) }             /* INV EscalationRoutedToSigner */
	:: atomic { !ReplayRefused -> assert(ReplayRefused) }                                   /* INV ReplayRefused */
	:: atomic { !CredentialOfCurrentGeneration -> assert(CredentialOfCurrentGeneration) }   /* INV CredentialOfCurrentGeneration */
	:: atomic { !ApprovedByDeveloper -> assert(ApprovedByDeveloper) }                       /* INV ApprovedByDeveloper */
	:: atomic { !PromptSeenBeforeApproval -> assert(PromptSeenBeforeApproval) }             /* INV PromptSeenBeforeApproval */
	:: atomic { !ResetOnlyStopped -> assert(ResetOnlyStopped) }                             /* INV ResetOnlyStopped */
	:: atomic { !SandboxOnlyBehindView -> assert(SandboxOnlyBehindView) }                   /* INV SandboxOnlyBehindView */
	:: atomic { !ViewNeverOutlivesGeneration -> assert(ViewNeverOutlivesGeneration) }       /* INV ViewNeverOutlivesGeneration */
	:: atomic { !LeaseProtectsLower -> assert(LeaseProtectsLower) }                         /* INV LeaseProtectsLower */
	:: atomic { !ResultSlotHoldsNewest -> assert(ResultSlotHoldsNewest) }                   /* INV ResultSlotHoldsNewest */
#ifdef HOSTRULES
	:: atomic { !NameCanariesBeforePublication -> assert(NameCanariesBeforePublication) }   /* INV NameCanariesBeforePublication */
	:: atomic { !SandboxNeverAddsRule -> assert(SandboxNeverAddsRule) }                     /* INV SandboxNeverAddsRule */
	:: atomic { !KeptRulesBeforePublication -> assert(KeptRulesBeforePublication) }         /* INV KeptRulesBeforePublication */
#endif
	od
}

/* When nothing can move any more, no accepted request may still be
 * waiting for its result. */
active proctype Quiescence()
{
	timeout -> assert(EveryAcceptedRequestResolved)                                           /* INV EveryAcceptedRequestResolved */
}
#elif defined(LIVENESS)
/* §7 liveness, checked with weak fairness (pan -a -f). */
ltl startup_progress {
	[] ((phase == D_STARTING && (cl[1] == CL_WAITING || cl[2] == CL_WAITING))
	    -> <> (phase == D_RUNNING || phase == D_FAILED))
}
/* Stated for request slot 1: the handlers of the two slots are the same
 * code, and the safety run's Quiescence check covers both slots. */
ltl escalation_resolves {
	[] (outstanding(1) -> <> (rq[1] == RQ_DONE || rq[1] == RQ_DROPPED))
}
/* A dead view is handled: it is gone and the Domain is failed, being
 * torn down, or closed (§5.7). */
ltl view_death_fails_domain {
	[] (view == P_EXITED -> <> (view == P_NONE && (cleaning || phase == D_ABSENT)))
}
#else
/* Witnesses (-DWITNESS): states that must be reachable.  run-model.sh
 * passes a witness check only if pan finds the state, i.e. reports the
 * claim violated.  After the view of generation 1 was killed, a new
 * launch starts generation 2 and publishes it. */
ltl reach_running_after_view_death {
	[] !(view_died_gen == 1 && gen == 2 && phase == D_RUNNING)
}
#ifdef HOSTRULES
/* With host rules: the name canaries pass and the Domain is published; a
 * rule the developer kept in generation 1 is held by generation 2's
 * helper, and a connection to that name passes there. */
ltl reach_kept_rule_used {
	[] !(kept && gen == 2 && published && denied_used_gen == 2)
}
#endif
#endif
