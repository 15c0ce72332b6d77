(** * Proposition 7.1: multi-head parameters are not identifiable (SPEC §1.2, §3.8).

    Counterpart of the sympy proofs [proofs.multihead] ([prove_equivalent], [split_v],
    [add_zero_head], [drop_zero_heads], [permute_heads], [mixed]).

    The canonical form of a list of heads: group the heads by equal W, replace each group
    by (W, Σ v_h), and drop each group whose summed v is 0.  Equality of W and v means
    equality of the d×d entries and d coordinates the model reads.  Proved for every d,
    every sequence X (every length N) and every head count H:
    - [F_canon]: a multi-head map equals the map of its canonical form;
    - [same_canon_same_map]: two parameterisations with the same canonical form (the
      same set of pairs) define the same map, the "if" direction of SPEC §1.2;
    - [split_family], [zero_family], [permutation_family] and [combination_family]. *)

From Coq Require Import Reals Lra Lia List Permutation Relations.
Import ListNotations.
From ExactAttention Require Import Defs.
Open Scope R_scope.

(** Entrywise equality of the d×d matrices, and of d-vectors, decided over ℝ. *)
Definition Req_b (x y : R) : bool := if Req_EM_T x y then true else false.

Definition forall_lt (n : nat) (P : nat -> bool) : bool := forallb P (seq 0 n).

Definition W_eqb (d : nat) (W W' : mat) : bool :=
  forall_lt d (fun i => forall_lt d (fun j => Req_b (W i j) (W' i j))).

Definition v_is_zero (d : nat) (v : vec) : bool := forall_lt d (fun i => Req_b (v i) 0).

(** Steps 1-2: add a head to the groups, merging it into the group of equal W. *)
Fixpoint insert (d : nat) (h : Head) (cs : list Head) : list Head :=
  match cs with
  | [] => [h]
  | c :: rest => if W_eqb d (fst c) (fst h) then (fst c, vadd (snd c) (snd h)) :: rest
                 else c :: insert d h rest
  end.

Definition merge (d : nat) (hs : list Head) : list Head := fold_right (insert d) [] hs.

(** Step 3: drop the groups whose summed v is 0. *)
Definition canon (d : nat) (hs : list Head) : list Head :=
  filter (fun h => negb (v_is_zero d (snd h))) (merge d hs).

Lemma Req_b_true : forall x y, Req_b x y = true <-> x = y.
Proof. intros; unfold Req_b; destruct (Req_EM_T x y); split; congruence. Qed.

Lemma forall_lt_true : forall n P, forall_lt n P = true <-> (forall i, (i < n)%nat -> P i = true).
Proof.
  intros n P; unfold forall_lt; rewrite forallb_forall; split.
  - intros H i Hi; apply H, in_seq; lia.
  - intros H i Hi; apply in_seq in Hi; apply H; lia.
Qed.

Lemma W_eqb_true : forall d W W', W_eqb d W W' = true ->
  forall i j, (i < d)%nat -> (j < d)%nat -> W i j = W' i j.
Proof.
  intros d W W' H i j Hi Hj; unfold W_eqb in H; rewrite forall_lt_true in H.
  specialize (H i Hi); rewrite forall_lt_true in H; specialize (H j Hj).
  apply Req_b_true; assumption.
Qed.

Lemma v_is_zero_true : forall d v, v_is_zero d v = true -> forall i, (i < d)%nat -> v i = 0.
Proof.
  intros d v H i Hi; unfold v_is_zero in H; rewrite forall_lt_true in H; apply Req_b_true, H, Hi.
Qed.

(** ** The map of a list of heads is a sum, so it is additive over lists. *)

Lemma F_nil : forall d X, F d [] X = 0.
Proof. reflexivity. Qed.

Lemma F_cons : forall d h hs X, F d (h :: hs) X = attn d (fst h) (snd h) X + F d hs X.
Proof. reflexivity. Qed.

Lemma F_app : forall d hs hs' X, F d (hs ++ hs') X = F d hs X + F d hs' X.
Proof. intros; unfold F; rewrite map_app, lsum_app; reflexivity. Qed.

Lemma F_insert : forall d h cs X, F d (insert d h cs) X = attn d (fst h) (snd h) X + F d cs X.
Proof.
  intros d h cs X; induction cs as [|c cs IH]; simpl.
  - unfold F; simpl; ring.
  - destruct (W_eqb d (fst c) (fst h)) eqn:E.
    + rewrite !F_cons; simpl; rewrite attn_v_add.
      rewrite (attn_W_ext d (fst c) (fst h) (snd h)) by (apply W_eqb_true; assumption); ring.
    + rewrite !F_cons, IH; ring.
Qed.

Lemma F_merge : forall d hs X, F d (merge d hs) X = F d hs X.
Proof.
  intros d hs X; induction hs as [|h hs IH]; simpl; [reflexivity|].
  rewrite F_insert, IH; reflexivity.
Qed.

Lemma F_drop_zero : forall d hs X, F d (filter (fun h => negb (v_is_zero d (snd h))) hs) X = F d hs X.
Proof.
  intros d hs X; induction hs as [|h hs IH]; simpl; [reflexivity|].
  destruct (v_is_zero d (snd h)) eqn:E; simpl.
  - rewrite F_cons, IH, attn_v_zero by (apply v_is_zero_true; assumption); ring.
  - rewrite !F_cons, IH; reflexivity.
Qed.

(** ** Proposition 7.1 *)

Theorem F_canon : forall (d : nat) (hs : list Head) (X : list vec), F d (canon d hs) X = F d hs X.
Proof. intros; unfold canon; rewrite F_drop_zero, F_merge; reflexivity. Qed.

(** Two heads are the same pair when their d×d matrices and d-vectors agree entrywise. *)
Definition same_head (d : nat) (h h' : Head) : Prop :=
  (forall i j, (i < d)%nat -> (j < d)%nat -> fst h i j = fst h' i j) /\
  (forall i, (i < d)%nat -> snd h i = snd h' i).

(** Two lists of heads are the same unordered set of pairs. *)
Definition same_set (d : nat) (cs cs' : list Head) : Prop :=
  exists l, Permutation cs l /\ Forall2 (same_head d) l cs'.

Lemma F_perm : forall d hs hs' X, Permutation hs hs' -> F d hs X = F d hs' X.
Proof. intros; unfold F; apply lsum_perm, Permutation_map; assumption. Qed.

Lemma F_same_heads : forall d l l' X, Forall2 (same_head d) l l' -> F d l X = F d l' X.
Proof.
  intros d l l' X H; induction H as [|h h' l l' [HW Hv] _ IH]; [reflexivity|].
  rewrite !F_cons, IH, (attn_W_ext d (fst h) (fst h')) by assumption.
  rewrite (attn_v_ext d _ (snd h) (snd h')) by assumption; reflexivity.
Qed.

(** The "if" direction: the same canonical form gives the same map, for every X. *)
Theorem same_canon_same_map : forall (d : nat) (hs hs' : list Head),
  same_set d (canon d hs) (canon d hs') -> forall X, F d hs X = F d hs' X.
Proof.
  intros d hs hs' [l [P S]] X.
  rewrite <- (F_canon d hs), <- (F_canon d hs'), (F_perm d _ l) by assumption.
  apply F_same_heads; assumption.
Qed.

(** ** The families of Proposition 7.1 *)

(** Heads sharing a W, with v split arbitrarily. *)
Theorem split_family : forall d (W : mat) (v1 v2 t : vec) (hs : list Head) X,
  F d ((W, v1) :: (W, v2) :: hs) X = F d ((W, vadd v1 t) :: (W, vsub v2 t) :: hs) X.
Proof.
  intros; rewrite !F_cons; simpl.
  rewrite !attn_v_add.
  assert (E : attn d W v2 X = attn d W (vsub v2 t) X + attn d W t X).
  { rewrite <- attn_v_add; apply attn_v_ext; intros; unfold vadd, vsub; ring. }
  rewrite E; ring.
Qed.

(** A head with v = 0, and any W, can be added or dropped: H is not identifiable. *)
Theorem zero_family : forall d (W : mat) (v : vec) (hs : list Head) X,
  (forall i, (i < d)%nat -> v i = 0) -> F d ((W, v) :: hs) X = F d hs X.
Proof. intros; rewrite F_cons, attn_v_zero by assumption; simpl; ring. Qed.

(** Permutations of the heads. *)
Theorem permutation_family : forall d (hs hs' : list Head) X, Permutation hs hs' -> F d hs X = F d hs' X.
Proof. intros; apply F_perm; assumption. Qed.

(** Any combination: one move anywhere in the list, repeated any number of times. *)
Inductive move (d : nat) : list Head -> list Head -> Prop :=
  | move_split : forall pre post W v1 v2 t,
      move d (pre ++ (W, v1) :: (W, v2) :: post) (pre ++ (W, vadd v1 t) :: (W, vsub v2 t) :: post)
  | move_zero : forall pre post W v, (forall i, (i < d)%nat -> v i = 0) ->
      move d (pre ++ (W, v) :: post) (pre ++ post)
  | move_add_zero : forall pre post W v, (forall i, (i < d)%nat -> v i = 0) ->
      move d (pre ++ post) (pre ++ (W, v) :: post)
  | move_perm : forall hs hs', Permutation hs hs' -> move d hs hs'.

Theorem combination_family : forall d hs hs',
  clos_refl_trans _ (move d) hs hs' -> forall X, F d hs X = F d hs' X.
Proof.
  intros d hs hs' R X; induction R as [hs hs' M| |hs hs' hs'' _ IH1 _ IH2].
  - destruct M.
    + rewrite !F_app; f_equal; apply split_family.
    + rewrite !F_app, zero_family by assumption; reflexivity.
    + rewrite !F_app, zero_family by assumption; reflexivity.
    + apply F_perm; assumption.
  - reflexivity.
  - rewrite IH1; assumption.
Qed.

(** Dropping the groups whose summed v is 0 is needed: without that step, two lists of heads
    with the same map can have different merged forms ([] and one head with v = 0). *)
Theorem merge_is_not_canonical : forall d,
  ~ (forall hs hs', (forall X, F d hs X = F d hs' X) -> same_set d (merge d hs) (merge d hs')).
Proof.
  intros d H.
  assert (E : forall X, F d [] X = F d [((fun _ _ => 0), vzero)] X).
  { intros X; rewrite zero_family; [reflexivity|intros; reflexivity]. }
  destruct (H _ _ E) as [l [P S]]; cbn in P.
  apply Permutation_nil in P; subst; inversion S.
Qed.
